/**
 * A local OpenTelemetry collector for the telemetry-on proxy row: OTLP/gRPC Export on the three
 * signal services, answering at once and keeping only counts. HTTP on `BENCH_PORT`: `/ping`,
 * `/port` (the gRPC port) and `/count` (exports and bytes received, JSON). Run as a child process
 * by the bench, never in-process.
 */
import * as grpc from "@grpc/grpc-js"
import * as http from "node:http"

const counts = { exports: 0, bytes: 0 }
const identity = (b: Buffer) => b
const server = new grpc.Server()
for (const [pkg, service] of [
  ["trace", "TraceService"],
  ["metrics", "MetricsService"],
  ["logs", "LogsService"]
] as const) {
  server.addService(
    {
      Export: {
        path: `/opentelemetry.proto.collector.${pkg}.v1.${service}/Export`,
        requestStream: false,
        responseStream: false,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity
      }
    },
    {
      Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        counts.exports++
        counts.bytes += call.request.length
        callback(null, Buffer.alloc(0))
      }
    }
  )
}

server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, grpcPort) => {
  if (error !== null) throw error
  const web = http.createServer((request, response) => {
    const body = request.url === "/ping" ? "pong" : request.url === "/port" ? String(grpcPort) : JSON.stringify(counts)
    response.writeHead(200, { "content-type": "text/plain" })
    response.end(body)
  })
  web.listen(Number(process.env.BENCH_PORT ?? "0"), "127.0.0.1")
  const stop = () => {
    server.forceShutdown()
    web.close(() => process.exit(0))
  }
  process.on("SIGTERM", stop)
  process.on("SIGINT", stop)
})
