/**
 * The streaming relay under `signing-proxy` and `proxy`: a node:http listener on a loopback
 * address whose requests are forwarded with node:http(s) as they arrive. Request and response
 * bodies are piped with back-pressure both ways, never buffered whole; a caller that goes away
 * aborts the forwarded exchange. A raw relay, not the typed client: the caller must see the
 * target's status, headers and bytes exactly as they were answered.
 */
import { Console, Effect, FiberSet } from "effect"
import * as Http from "node:http"
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http"
import * as Https from "node:https"
import type { AddressInfo } from "node:net"
import { pipeline } from "node:stream"
import { CliFailure } from "./CliFailure.ts"
import { localRequestRefusal } from "./LocalRequest.ts"

/** The loopback address every listener of the CLI binds. */
export const loopback = "127.0.0.1"

/**
 * Headers that describe one hop, never forwarded in either direction (RFC 9110 7.6.1), plus Host
 * and Expect (the listener has already answered a `100-continue` itself).
 */
const hopByHop = new Set([
  "expect",
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host"
])

/**
 * Copies `headers` without the hop-by-hop ones (and those `Connection` lists), Host, and every
 * name `drop` rejects (names are lower case).
 */
export const copyHeaders = (
  headers: IncomingHttpHeaders,
  drop: (name: string) => boolean = () => false
): OutgoingHttpHeaders => {
  const listed = new Set(
    String(headers.connection ?? "")
      .split(",")
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== "")
  )
  const out: OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || hopByHop.has(name) || listed.has(name) || drop(name)) continue
    out[name] = value
  }
  return out
}

/** Where and how one request is forwarded. */
export interface Forward {
  readonly url: URL
  readonly method: string
  readonly headers: OutgoingHttpHeaders
}

/**
 * How a forwarded exchange ended: the status relayed (undefined when none was), the failure of
 * the forwarding if any, and whether the caller left before the end (its choice, not a failure:
 * `curl -f` hangs up on an error status).
 */
export interface RelayOutcome {
  readonly status: number | undefined
  readonly error: string | undefined
  readonly callerLeft?: boolean
}

/** TLS choices for https targets: extra trusted certificates, or no verification at all. */
export interface TlsOptions {
  readonly ca?: ReadonlyArray<string> | undefined
  readonly insecure?: boolean | undefined
}

const errorText = (error: unknown): string => {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  const message = error instanceof Error ? error.message : String(error)
  return code !== undefined && !message.includes(code) ? `${message} (${code})` : message
}

/** A relay's connection pools (keep-alive) for http and https targets; `close` destroys them. */
export const makeAgents = (tls: TlsOptions) => {
  const http = new Http.Agent({ keepAlive: true })
  const https = new Https.Agent({
    keepAlive: true,
    ...(tls.insecure === true ? { rejectUnauthorized: false } : {}),
    ...(tls.ca === undefined ? {} : { ca: [...tls.ca] })
  })
  return {
    for: (url: URL) => (url.protocol === "https:" ? https : http),
    close: () => {
      http.destroy()
      https.destroy()
    }
  }
}
export type Agents = ReturnType<typeof makeAgents>

/**
 * Forwards `req` to `forward` and relays the answer into `res`, both bodies streamed. When the
 * target cannot be reached before any answer, the caller gets 502 with the standard error body
 * `{"error", "code": "target_unreachable"}`; after the status line only the connection can be
 * cut. Interruption (the listener closing) aborts both sides.
 */
export const relay = (
  req: IncomingMessage,
  res: ServerResponse,
  forward: Forward,
  agents: Agents
): Effect.Effect<RelayOutcome> =>
  Effect.callback<RelayOutcome>((resume) => {
    let done = false
    const finish = (outcome: RelayOutcome) => {
      if (done) return
      done = true
      resume(Effect.succeed(outcome))
    }
    const transport = forward.url.protocol === "https:" ? Https : Http
    const outgoing = transport.request(forward.url, {
      method: forward.method,
      headers: forward.headers,
      agent: agents.for(forward.url)
    })
    outgoing.on("response", (answer) => {
      const status = answer.statusCode ?? 502
      const headers = copyHeaders(answer.headers)
      if (answer.statusMessage === undefined) res.writeHead(status, headers)
      else res.writeHead(status, answer.statusMessage, headers)
      res.flushHeaders()
      pipeline(answer, res, (error) => {
        // the answer's stream is intact: the caller closed its side
        const callerLeft = error !== undefined && error !== null && answer.errored === null && !res.writableFinished
        finish(
          callerLeft
            ? { status, error: undefined, callerLeft }
            : { status, error: error === undefined || error === null ? undefined : errorText(error) }
        )
      })
    })
    outgoing.on("error", (error) => {
      if (res.headersSent) {
        res.destroy()
        finish({ status: res.statusCode, error: errorText(error) })
        return
      }
      const reason = `cannot reach ${forward.url.origin}: ${errorText(error)}`
      const body = `${JSON.stringify({ error: reason, code: "target_unreachable" })}\n`
      res.writeHead(502, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
      res.end(body)
      finish({ status: 502, error: reason })
    })
    // a caller that goes away aborts the forwarded exchange
    res.on("close", () => {
      if (!res.writableFinished) {
        outgoing.destroy()
        finish({ status: res.headersSent ? res.statusCode : undefined, error: undefined, callerLeft: true })
      }
    })
    pipeline(req, outgoing, () => {})
    return Effect.sync(() => {
      outgoing.destroy()
      res.destroy()
    })
  })

/** Why CONNECT is refused (see `listenLoopback`). */
export const connectRefusal =
  "CONNECT tunnels are not relayed: send http:// URLs through this proxy (it forwards them with the upstream's scheme) or use the listener's URL"

/** Where a started listener is reachable. */
export interface Listening {
  readonly port: number
  /** `http://127.0.0.1:<port>` */
  readonly url: string
}

const listenFailure = (error: NodeJS.ErrnoException, port: number) =>
  new CliFailure({
    message: `cannot listen on ${loopback}:${port}: ${error.code === "EADDRINUSE" ? "address already in use" : error.message}`
  })

/**
 * Starts a node:http listener on 127.0.0.1:`port` (0: any free port) for the current scope: each
 * request is handled by `handle` in a fiber of the scope; closing the scope closes the listener,
 * its connections and the requests in flight. No request timeout: bodies may stream for long.
 * A request with a foreign `Host` or from another site's page (`localRequestRefusal`) is
 * answered 403 before `handle` sees it.
 */
export const listenLoopback = Effect.fnUntraced(function* (
  port: number,
  handle: (req: IncomingMessage, res: ServerResponse) => Effect.Effect<void>
) {
  const run = yield* FiberSet.makeRuntime<never, void, never>()
  const server = yield* Effect.acquireRelease(
    Effect.callback<Http.Server, CliFailure>((resume) => {
      const server = Http.createServer({ requestTimeout: 0, headersTimeout: 30_000 }, (req, res) => {
        const refusal = localRequestRefusal(req.headers, req.url ?? "/", (server.address() as AddressInfo).port)
        if (refusal === undefined) {
          run(handle(req, res))
          return
        }
        const body = `${JSON.stringify({ error: refusal.error, code: refusal.code })}\n`
        req.resume()
        res.writeHead(403, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
        res.end(body)
        run(Console.error(`${req.method ?? "GET"} ${req.url ?? "/"} -> 403: ${refusal.error}`))
      })
      // a CONNECT tunnel (an https:// URL through a forward proxy) would carry TLS bytes the relay
      // cannot sign or inject into: refused with a reason instead of a silently dropped socket
      server.on("connect", (_req, socket) => {
        const body = `${JSON.stringify({ error: connectRefusal, code: "connect_not_supported" })}\n`
        socket.on("error", () => {})
        socket.end(
          `HTTP/1.1 405 Method Not Allowed\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
        )
      })
      const onError = (error: NodeJS.ErrnoException) => resume(Effect.fail(listenFailure(error, port)))
      server.once("error", onError)
      server.listen(port, loopback, () => {
        server.off("error", onError)
        server.on("error", () => {})
        resume(Effect.succeed(server))
      })
      return Effect.sync(() => server.close())
    }),
    (server) =>
      Effect.callback<void>((resume) => {
        server.close(() => resume(Effect.void))
        server.closeAllConnections()
      })
  )
  const { port: bound } = server.address() as AddressInfo
  return { port: bound, url: `http://${loopback}:${bound}` } satisfies Listening
})
