/**
 * A local HTTP upstream for tests: node:http on 127.0.0.1, an ephemeral port, every request
 * recorded (bodies capped), every socket destroyed on close.
 */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Effect, type Scope } from "effect"

/** One request as the server received it. */
export interface RecordedRequest {
  readonly method: string
  /** Path and query, as sent on the request line. */
  readonly url: string
  /** Lower-case names (node:http joins repeated headers). */
  readonly headers: IncomingHttpHeaders
  /** Names and values exactly as received, in order. */
  readonly rawHeaders: ReadonlyArray<string>
  readonly body: Buffer
}

/** Answers one recorded request; may leave `response` open to simulate a stalled upstream. */
export type LocalHandler = (request: RecordedRequest, response: ServerResponse) => void

/** A running local server. */
export interface LocalServer {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string
  readonly port: number
  readonly requests: ReadonlyArray<RecordedRequest>
  readonly close: () => Promise<void>
}

const maxRecordedBody = 1024 * 1024
const maxRecordedRequests = 1000

/** Starts a server on 127.0.0.1 with an ephemeral port. */
export const startLocalServer = (handler: LocalHandler): Promise<LocalServer> => {
  const requests: Array<RecordedRequest> = []
  const server = createServer((incoming, response) => {
    const chunks: Array<Buffer> = []
    let size = 0
    incoming.on("data", (chunk: Buffer) => {
      size += chunk.byteLength
      if (size <= maxRecordedBody) chunks.push(chunk)
    })
    incoming.on("end", () => {
      const request: RecordedRequest = {
        method: incoming.method ?? "",
        url: incoming.url ?? "",
        headers: incoming.headers,
        rawHeaders: incoming.rawHeaders,
        body: Buffer.concat(chunks)
      }
      if (requests.length < maxRecordedRequests) requests.push(request)
      try {
        handler(request, response)
      } catch {
        response.statusCode = 500
        response.end()
      }
    })
  })
  return new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        origin: `http://127.0.0.1:${port}`,
        port,
        requests,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections()
            server.close(() => done())
          })
      })
    })
  })
}

/** `startLocalServer` as a scoped resource, closed when the scope closes. */
export const localServer = (handler: LocalHandler): Effect.Effect<LocalServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => startLocalServer(handler)),
    (server) => Effect.promise(() => server.close())
  )
