/**
 * The Prometheus scrape listener (`telemetry.prometheus`, docs/telemetry.md "Prometheus";
 * SECURITY.md: observability endpoints are not public). One plain Node listener per process,
 * on `telemetry.prometheus.host:port` (loopback and 9464 by default), answering `GET /metrics`
 * with the process's one metric registry (effect's `PrometheusMetrics` format, svc's names) and 404 to anything else.
 * It is none of the service servers: no route of theirs, and none of their inbound telemetry, so
 * a scrape is neither counted as an HTTP request nor traced. It closes with the process's drain.
 */
import { Data, Effect, Layer } from "effect"
import * as http from "node:http"
import type { ResolvedConfig } from "../config/SvcConfig.ts"
import { listenError } from "../config/ListenError.ts"
import { TelemetryRuntime } from "../telemetry/TelemetryLayer.ts"
import { ServerDrain } from "./ServerDrain.ts"

/** The listener could not bind (port in use, address not local): one line, startup fails. */
export class MetricsListenError extends Data.TaggedError("MetricsListenError")<{ readonly message: string }> {}

const contentType = "text/plain; version=0.0.4; charset=utf-8"

const handler =
  (scrape: () => string) =>
  (request: http.IncomingMessage, response: http.ServerResponse): void => {
    // The body, if any, is never read: drop it.
    request.resume()
    const pathname = (request.url ?? "").split("?", 1)[0]
    if (pathname !== "/metrics") {
      response.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found\n")
      return
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" }).end()
      return
    }
    const body = scrape()
    response.writeHead(200, { "content-type": contentType, "content-length": Buffer.byteLength(body) })
    response.end(request.method === "HEAD" ? undefined : body)
  }

const listen = (server: http.Server, host: string, port: number) =>
  Effect.callback<number, MetricsListenError>((resume) => {
    const onError = (error: NodeJS.ErrnoException) =>
      resume(
        Effect.fail(new MetricsListenError({ message: listenError("telemetry.prometheus", host, port, error).message }))
      )
    server.once("error", onError)
    server.listen(port, host, () => {
      server.off("error", onError)
      const address = server.address()
      resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : port))
    })
  })

const close = (server: http.Server) =>
  Effect.callback<void>((resume) => {
    if (!server.listening) return resume(Effect.void)
    server.close(() => resume(Effect.void))
    server.closeAllConnections()
  })

/**
 * The scrape listener when `telemetry.prometheus.enabled` (nothing otherwise); `bound` receives
 * the port it got (the start-up banner prints it; `port: 0` asks the system for one).
 */
export const layer = (
  config: Pick<ResolvedConfig, "telemetry">,
  bound: (port: number) => void
): Layer.Layer<never, MetricsListenError, TelemetryRuntime | ServerDrain> => {
  const { enabled, host, port } = config.telemetry.prometheus
  if (!enabled) return Layer.empty
  return Layer.effectDiscard(
    Effect.gen(function* () {
      const scrape = (yield* TelemetryRuntime).scrape
      if (scrape === undefined) return
      const drain = yield* ServerDrain
      const server = drain.track(
        http.createServer({ maxHeaderSize: 16 * 1024, headersTimeout: 15_000, requestTimeout: 30_000 }, handler(scrape))
      )
      server.keepAliveTimeout = 5_000
      const got = yield* Effect.acquireRelease(listen(server, host, port), () => close(server))
      bound(got)
    })
  )
}
