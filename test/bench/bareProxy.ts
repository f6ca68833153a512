/**
 * The framework floor of the proxy rows: a bare `node:http` server on 127.0.0.1 and `BENCH_PORT`
 * forwarding every request to `BENCH_UPSTREAM` through one undici keep-alive `Pool` (`stream`),
 * replacing `Authorization` with `Bearer <BENCH_API_KEY>`, dropping hop-by-hop headers on both legs
 * and streaming both bodies (each upstream chunk is written on as it comes: SSE passes through).
 * No routing, policy or accounting: what any Node proxy costs at least. Run as a child process.
 *
 * `BENCH_BURN_US` (profiling only, never set by the bench): spend that many µs of CPU in plain
 * JavaScript before forwarding each request. The bare proxy then serves requests at about svc's
 * rate, and its own socket and HTTP work per request can be compared with svc's at the same rate
 * (docs/performance.md, "Where each request's CPU goes").
 */
import * as http from "node:http"
import { Pool } from "undici"

const port = Number(process.env.BENCH_PORT ?? "0")
const upstream = process.env.BENCH_UPSTREAM ?? ""
const apiKey = process.env.BENCH_API_KEY ?? ""
if (upstream === "" || apiKey === "") throw new Error("bareProxy: BENCH_UPSTREAM and BENCH_API_KEY must be set")
const authorization = `Bearer ${apiKey}`
const burnMs = Number(process.env.BENCH_BURN_US ?? "0") / 1000

/** Spins for `burnMs` (the `BENCH_BURN_US` experiment). */
const burn = () => {
  const until = performance.now() + burnMs
  while (performance.now() < until) {}
}

/** RFC 7230 section 6.1 hop-by-hop headers, plus `host` (set by the pool for the upstream). */
const hopByHop = new Set([
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

type Headers = Record<string, string | Array<string>>

const endToEnd = (headers: http.IncomingHttpHeaders | Record<string, string | Array<string> | undefined>) => {
  const out: Headers = {}
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !hopByHop.has(name)) out[name] = value
  return out
}

const pool = new Pool(upstream, {
  pipelining: 1,
  keepAliveTimeout: 60_000,
  headersTimeout: 120_000,
  bodyTimeout: 120_000
})

const hasBody = (request: http.IncomingMessage) =>
  request.headers["transfer-encoding"] !== undefined ||
  (request.headers["content-length"] !== undefined && request.headers["content-length"] !== "0")

const server = http.createServer((request, response) => {
  if (burnMs > 0) burn()
  const headers = endToEnd(request.headers)
  headers.authorization = authorization
  pool.stream(
    {
      method: request.method ?? "GET",
      path: request.url ?? "/",
      headers,
      body: hasBody(request) ? request : null,
      opaque: response
    },
    ({ statusCode, headers: upstreamHeaders, opaque }) => {
      opaque.writeHead(statusCode, endToEnd(upstreamHeaders))
      return opaque
    },
    (error) => {
      if (error === null) return
      if (response.headersSent) response.destroy(error)
      else {
        response.writeHead(502, { "content-type": "text/plain", "content-length": "11" })
        response.end("bad gateway")
      }
    }
  )
})

server.keepAliveTimeout = 60_000
server.requestTimeout = 0
server.listen(port, "127.0.0.1")

const stop = () => {
  server.close(() => {
    void pool.close().finally(() => process.exit(0))
  })
  server.closeAllConnections()
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
