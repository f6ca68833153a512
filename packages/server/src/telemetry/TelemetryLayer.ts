/**
 * The telemetry of one `svc serve` process (spec 8.3): with `telemetry.enabled` and a non-empty
 * endpoint, the tracer, the metric store and the log exporter of the enabled signals, exported
 * over OTLP (`grpc` through `GrpcForwarder`, `http/protobuf` with effect's exporter and fetch);
 * otherwise nothing at all — the no-op `Telemetry`, the native tracer, no exporter, no timer.
 * `telemetry.prometheus.enabled` keeps a metric store for the `GET /metrics` listener even without
 * OTLP (one store per process, scraped on one listener: `http/MetricsListener.ts`).
 *
 * Resource: `service.name` = `<prefix>-<serviceId>` (a process running several services joins
 * their ids with `+`), `service.version`, a random `service.instance.id` per start, and the
 * static attributes.
 */
import { Context, Duration, Effect, Layer, Logger, Tracer } from "effect"
import { FetchHttpClient, HttpBody, type HttpClient } from "effect/http"
import { OtlpExporter, OtlpSerialization } from "effect/observability"
import type { ResolvedConfig } from "../config/SvcConfig.ts"
import type { ResolvedTelemetry } from "../config/TelemetryConfig.ts"
import { version } from "../config/Version.ts"
import { accessLogWriter, type Inbound, inboundSpanOf, makeInbound, type RouteTemplate } from "./Inbound.ts"
import { otlpLogger } from "./Logging.ts"
import { MetricStore, otlpSnapshotter, prometheusText } from "./MetricStore.ts"
import { makeTelemetry, Telemetry, type TelemetryApi } from "./Telemetry.ts"
import { encodeTraces } from "./OtlpProtobuf.ts"
import { type ExportedSpan, keyValues, makeTracer, nowNanos, type SvcTracer } from "./Tracing.ts"

/** What the HTTP servers need from telemetry. */
export interface TelemetryRuntimeShape {
  readonly api: TelemetryApi
  readonly settings: ResolvedTelemetry
  /** The inbound side of `service` (request id, server span, metrics, access log). */
  readonly inbound: (service: string, routes: ReadonlyArray<RouteTemplate>) => Inbound
  /** The Prometheus text of this process's metrics; undefined when the `/metrics` listener is off. */
  readonly scrape: (() => string) | undefined
}

export class TelemetryRuntime extends Context.Service<TelemetryRuntime, TelemetryRuntimeShape>()(
  "@svc/server/telemetry/TelemetryRuntime"
) {}

/** The `service.name` of a process running `services`. */
export const serviceName = (settings: ResolvedTelemetry, services: ReadonlyArray<string>): string =>
  settings.serviceNameOverride ?? `${settings.serviceNamePrefix}-${services.join("+")}`

/** The OTLP resource of this process. */
export const resource = (settings: ResolvedTelemetry, services: ReadonlyArray<string>) => ({
  attributes: keyValues(
    Object.entries({
      ...settings.resourceAttributes,
      "service.name": serviceName(settings, services),
      "service.version": version,
      "service.instance.id": globalThis.crypto.randomUUID(),
      "telemetry.sdk.name": "svc",
      "telemetry.sdk.language": "nodejs"
    })
  ),
  droppedAttributesCount: 0
})

const scope = { name: "svc", version }

/** The HttpClient the exporters post with: gRPC forwarding (gRPC loaded only then) or fetch. */
const transport = (settings: ResolvedTelemetry): Layer.Layer<HttpClient.HttpClient> =>
  settings.protocol === "grpc"
    ? Layer.unwrap(
        Effect.promise(() => import("./GrpcForwarder.ts")).pipe(
          Effect.map((GrpcForwarder) =>
            GrpcForwarder.layer({ endpoint: settings.endpoint, insecure: settings.insecure, headers: settings.headers })
          )
        )
      )
    : FetchHttpClient.layer

/** The base URL of http/protobuf exports (a bare `host:port` gets a scheme from `insecure`). */
export const httpBaseUrl = (settings: ResolvedTelemetry): string => {
  const endpoint = settings.endpoint.replace(/\/+$/, "")
  return /^https?:\/\//i.test(endpoint) ? endpoint : `${settings.insecure ? "http" : "https"}://${endpoint}`
}

const exportUrl = (settings: ResolvedTelemetry, signal: "traces" | "metrics" | "logs") =>
  settings.protocol === "grpc" ? `http://grpc/v1/${signal}` : `${httpBaseUrl(settings)}/v1/${signal}`

/** The telemetry layer of a process running `services`. */
export const layer = (
  config: Pick<ResolvedConfig, "telemetry" | "log">,
  services: ReadonlyArray<string>
): Layer.Layer<TelemetryRuntime> => {
  const settings = config.telemetry
  const exporting = settings.enabled
  const tracing = exporting && settings.signals.traces
  const metering = (exporting && settings.signals.metrics) || settings.prometheus.enabled
  const exportingLogs = exporting && settings.signals.logs
  const accessLog = config.log.access ? accessLogWriter(config.log.format) : undefined

  const runtime = (api: TelemetryApi, tracer: SvcTracer | undefined, store: MetricStore | undefined) =>
    TelemetryRuntime.of({
      api,
      settings,
      inbound: (service, routes) => makeInbound({ service, settings, routes, tracer, store, accessLog }),
      scrape: settings.prometheus.enabled && store !== undefined ? () => prometheusText(store) : undefined
    })

  if (!exporting) {
    const store = metering ? new MetricStore() : undefined
    const api = makeTelemetry(settings, undefined, store, inboundSpanOf)
    return Layer.mergeAll(
      Layer.succeed(TelemetryRuntime, runtime(api, undefined, store)),
      Layer.succeed(Telemetry, api)
    )
  }

  const headers = settings.protocol === "grpc" ? {} : settings.headers
  const otlpResource = resource(settings, services)

  return Layer.unwrap(
    Effect.gen(function* () {
      const serialization = yield* OtlpSerialization.OtlpSerialization
      let tracer: SvcTracer | undefined
      if (tracing) {
        const exporter = yield* OtlpExporter.make({
          label: "OtlpTracer",
          url: exportUrl(settings, "traces"),
          headers,
          exportInterval: Duration.millis(settings.traceExportIntervalMs),
          maxBatchSize: 1000,
          body: (spans: Array<ExportedSpan>) => [
            HttpBody.uint8Array(encodeTraces(otlpResource.attributes, scope, spans), "application/x-protobuf"),
            Effect.void
          ],
          shutdownTimeout: Duration.seconds(3)
        })
        tracer = makeTracer(exporter, settings.samplingRatio)
      }
      const store = metering ? new MetricStore() : undefined
      if (store !== undefined && settings.signals.metrics) {
        const snapshot = otlpSnapshotter(store, settings.temporality, nowNanos())
        yield* OtlpExporter.make({
          label: "OtlpMetrics",
          url: exportUrl(settings, "metrics"),
          headers,
          exportInterval: Duration.millis(settings.metricExportIntervalMs),
          maxBatchSize: "disabled",
          exportEmpty: true,
          body: () => {
            const { metrics, commit } = snapshot(nowNanos())
            return [
              serialization.metrics({
                resourceMetrics: [{ resource: otlpResource, scopeMetrics: [{ scope, metrics }] }]
              }),
              Effect.sync(commit)
            ]
          },
          shutdownTimeout: Duration.seconds(3)
        })
      }
      const logs = exportingLogs
        ? yield* OtlpExporter.make({
            label: "OtlpLogger",
            url: exportUrl(settings, "logs"),
            headers,
            exportInterval: Duration.millis(settings.logExportIntervalMs),
            maxBatchSize: 1000,
            body: (logRecords) => [
              serialization.logs({
                resourceLogs: [{ resource: otlpResource, scopeLogs: [{ scope, logRecords }] }]
              }),
              Effect.void
            ],
            shutdownTimeout: Duration.seconds(3)
          })
        : undefined
      const api = makeTelemetry(settings, tracer, store, inboundSpanOf)
      return Layer.mergeAll(
        Layer.succeed(TelemetryRuntime, runtime(api, tracer, store)),
        Layer.succeed(Telemetry, api),
        tracer === undefined ? Layer.empty : Layer.succeed(Tracer.Tracer, tracer),
        logs === undefined ? Layer.empty : Logger.layer([otlpLogger(logs.push)], { mergeWithExisting: true })
      )
    })
  ).pipe(
    Layer.provide(OtlpExporter.layerFlusher),
    Layer.provide(OtlpSerialization.layerProtobuf),
    Layer.provide(transport(settings))
  )
}
