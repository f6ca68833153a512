/**
 * The baseline: a bare `node:http` server answering `pong` on GET /ping (404 otherwise), on
 * 127.0.0.1 and the port in `BENCH_PORT`. Run as a child process by the bench, never in-process.
 */
import * as http from "node:http"

const port = Number(process.env.BENCH_PORT ?? "0")

const server = http.createServer((request, response) => {
  if (request.method === "GET" && request.url === "/ping") {
    response.writeHead(200, { "content-type": "text/plain", "content-length": "4" })
    response.end("pong")
    return
  }
  response.writeHead(404, { "content-length": "0" })
  response.end()
})

server.keepAliveTimeout = 60_000
server.listen(port, "127.0.0.1")

const stop = () => server.close(() => process.exit(0))
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
