/**
 * The upstream of the proxy rows: a bare `node:http` server on 127.0.0.1 and `BENCH_PORT` that
 * answers only requests carrying `Authorization: Bearer <BENCH_API_KEY>` (so a proxy that does not
 * inject the credential shows as errors): GET /json (small JSON), POST /upload (drains, answers the
 * byte count), GET /sse (server-sent events); GET /ping and GET /count (the `GET /json` answered so
 * far, which the bench reads around a measured window) need no credential. Run as a child process.
 */
import * as http from "node:http"
import { sseEvent, sseEvents, sseIntervalMs, upstreamJson, upstreamPaths } from "./ProxyShapes.ts"

const port = Number(process.env.BENCH_PORT ?? "0")
const expected = `Bearer ${process.env.BENCH_API_KEY ?? ""}`
if (expected === "Bearer ") throw new Error("proxyUpstream: BENCH_API_KEY is not set")
const json = Buffer.from(JSON.stringify(upstreamJson))
let served = 0

const answer = (response: http.ServerResponse, status: number, type: string, body: string | Buffer) => {
  response.writeHead(status, { "content-type": type, "content-length": String(Buffer.byteLength(body)) })
  response.end(body)
}

const sse = (response: http.ServerResponse) => {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  response.write(sseEvent(1))
  let sent = 1
  const timer = setInterval(() => {
    sent++
    if (sent < sseEvents) {
      response.write(sseEvent(sent))
      return
    }
    clearInterval(timer)
    response.end(sseEvent(sent))
  }, sseIntervalMs)
  response.once("close", () => clearInterval(timer))
}

const server = http.createServer((request, response) => {
  const url = request.url ?? "/"
  if (request.method === "GET" && url === upstreamPaths.ping) return answer(response, 200, "text/plain", "pong")
  if (request.method === "GET" && url === upstreamPaths.count)
    return answer(response, 200, "text/plain", String(served))
  if (request.headers.authorization !== expected) {
    request.resume()
    return answer(response, 401, "text/plain", "missing or wrong upstream credential")
  }
  if (request.method === "GET" && url === upstreamPaths.json) {
    served++
    return answer(response, 200, "application/json", json)
  }
  if (request.method === "GET" && url === upstreamPaths.sse) return sse(response)
  if (request.method === "POST" && url === upstreamPaths.upload) {
    let bytes = 0
    request.on("data", (chunk: Buffer) => {
      bytes += chunk.length
    })
    request.on("end", () => answer(response, 200, "application/json", JSON.stringify({ bytes })))
    return
  }
  request.resume()
  answer(response, 404, "text/plain", "not found")
})

server.keepAliveTimeout = 60_000
server.requestTimeout = 0
server.listen(port, "127.0.0.1")

const stop = () => {
  server.close(() => process.exit(0))
  server.closeAllConnections()
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
