/**
 * OTLP over gRPC (the spec's default protocol) under effect's OTLP exporter: an `HttpClient`
 * whose "POST /v1/traces" (and metrics, logs) sends the same protobuf message — an OTLP/HTTP
 * protobuf body is exactly the gRPC `Export…ServiceRequest` — as a unary call to the collector's
 * `…Service/Export` method over `@grpc/grpc-js`. Batching, retries and shutdown flushing stay the
 * exporter's; a gRPC status maps to the HTTP status the exporter's retry policy understands.
 */
import * as grpc from "@grpc/grpc-js"
import { Effect, Layer } from "effect"
import { HttpClient, HttpClientError, HttpClientResponse } from "effect/http"

const methods: Record<string, string> = {
  "/v1/traces": "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
  "/v1/metrics": "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
  "/v1/logs": "/opentelemetry.proto.collector.logs.v1.LogsService/Export"
}

/** HTTP status for a gRPC status code (OTLP/gRPC retryable codes become 503, throttling 429). */
const httpStatus = (code: grpc.status): number => {
  switch (code) {
    case grpc.status.OK:
      return 200
    case grpc.status.RESOURCE_EXHAUSTED:
      return 429
    case grpc.status.UNAVAILABLE:
    case grpc.status.CANCELLED:
    case grpc.status.DEADLINE_EXCEEDED:
    case grpc.status.ABORTED:
    case grpc.status.OUT_OF_RANGE:
    case grpc.status.DATA_LOSS:
      return 503
    case grpc.status.UNAUTHENTICATED:
      return 401
    case grpc.status.PERMISSION_DENIED:
      return 403
    case grpc.status.UNIMPLEMENTED:
      return 404
    default:
      return 400
  }
}

const identity = (b: Buffer) => b

/** `host:port` and whether the channel is plain text, from an endpoint (`host:port` or a URL). */
export const grpcTarget = (endpoint: string, insecure: boolean): { target: string; plaintext: boolean } => {
  const match = /^(https?):\/\/([^/]+)/i.exec(endpoint)
  if (match === null) return { target: endpoint.replace(/\/+$/, ""), plaintext: insecure }
  return { target: match[2]!, plaintext: insecure || match[1]!.toLowerCase() === "http" }
}

/** An HttpClient layer forwarding OTLP export posts to a gRPC collector; the channel closes with the layer. */
export const layer = (options: {
  readonly endpoint: string
  readonly insecure: boolean
  readonly headers: Readonly<Record<string, string>>
}): Layer.Layer<HttpClient.HttpClient> =>
  Layer.effect(
    HttpClient.HttpClient,
    Effect.gen(function* () {
      const { target, plaintext } = grpcTarget(options.endpoint, options.insecure)
      const client = yield* Effect.acquireRelease(
        Effect.sync(
          () =>
            new grpc.Client(target, plaintext ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(), {
              "grpc.keepalive_time_ms": 60_000
            })
        ),
        (c) => Effect.sync(() => c.close())
      )
      return HttpClient.make((request, url, signal) => {
        const method = methods[url.pathname.replace(/^.*(\/v1\/(traces|metrics|logs))$/, "$1")]
        const body = request.body
        if (method === undefined || body._tag !== "Uint8Array") {
          return Effect.fail(
            new HttpClientError.HttpClientError({
              reason: new HttpClientError.EncodeError({ request, description: "not an OTLP protobuf export" })
            })
          )
        }
        const metadata = new grpc.Metadata()
        for (const [key, value] of Object.entries(options.headers)) metadata.set(key, value)
        return Effect.callback<HttpClientResponse.HttpClientResponse, HttpClientError.HttpClientError>((resume) => {
          const call = client.makeUnaryRequest(
            method,
            identity,
            identity,
            Buffer.from(body.body.buffer, body.body.byteOffset, body.body.byteLength),
            metadata,
            { deadline: Date.now() + 10_000 },
            (error) => {
              const status = error === null ? 200 : httpStatus(error.code)
              resume(Effect.succeed(HttpClientResponse.fromWeb(request, new Response(null, { status }))))
            }
          )
          const abort = () => call.cancel()
          signal.addEventListener("abort", abort, { once: true })
          return Effect.sync(() => {
            signal.removeEventListener("abort", abort)
            call.cancel()
          })
        })
      })
    })
  )
