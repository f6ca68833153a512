/**
 * A local upstream for black-box tests: an HTTP server on 127.0.0.1 that records every request
 * (method, path, query, headers, body) and answers through a replaceable handler.
 */
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** One request as the upstream saw it. */
export interface SeenRequest {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
}

/** What a handler answers. */
export interface Answer {
  readonly status: number
  readonly headers?: Record<string, string>
  readonly body?: string
}

/** A running upstream. */
export interface Upstream {
  readonly port: number
  readonly origin: string
  readonly seen: Array<SeenRequest>
  /** Replaces the answer for requests whose path starts with `prefix`. */
  readonly route: (prefix: string, handler: (request: SeenRequest) => Answer) => void
  readonly close: () => Promise<void>
}

/** Starts an upstream; unrouted paths answer 404. */
export const startUpstream = async (): Promise<Upstream> => {
  const seen: Array<SeenRequest> = []
  const routes = new Map<string, (request: SeenRequest) => Answer>()
  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://upstream")
      const request: SeenRequest = {
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8")
      }
      seen.push(request)
      const handler = [...routes.entries()]
        .filter(([prefix]) => url.pathname.startsWith(prefix))
        .sort((a, b) => b[0].length - a[0].length)[0]?.[1]
      const answer = handler?.(request) ?? { status: 404, body: "not found" }
      res.writeHead(answer.status, answer.headers ?? {})
      res.end(answer.body ?? "")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    seen,
    route: (prefix, handler) => {
      routes.set(prefix, handler)
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}
