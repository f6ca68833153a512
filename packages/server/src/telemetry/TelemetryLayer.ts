/**
 * The telemetry of one `svc serve` process (spec 8.3): with `telemetry.enabled` and a non-empty
 * endpoint, the tracer, the metric instruments and the log exporter of the enabled signals,
 * exported over OTLP (`grpc` through `GrpcForwarder`, `http/protobuf` with effect's exporters and
 * fetch); otherwise nothing at all — the no-op `Telemetry`, the native tracer, no exporter, no
 * timer. Metrics are effect's `Metric` registry of the process (`Metrics.ts`): effect's
 * `OtlpMetrics` exports it, effect's `PrometheusMetrics` formats it for the `GET /metrics`
 * listener (`telemetry.prometheus.enabled`, one listener per process: `http/MetricsListener.ts`).
 * Every export attempt is observed by `ExportHealth` (failures counted, logged, on `/healthz`).
 *
 * Resource: `service.name` = `<prefix>-<serviceId>` (a process running several services joins
 * their ids with `+`), `service.version`, a random `service.instance.id` per start, and the
 * static attributes.
 */
import { Context, Duration, Effect, Layer, Logger, Metric, Tracer } from "effect"
import { FetchHttpClient, HttpBody, HttpClient } from "effect/http"
import { OtlpExporter, OtlpMetrics, OtlpSerialization, PrometheusMetrics } from "effect/observability"
import type { ResolvedConfig } from "../config/SvcConfig.ts"
import type { ResolvedTelemetry } from "../config/TelemetryConfig.ts"
import { version } from "../config/Version.ts"
import { accessLogWriter, type Inbound, inboundSpanOf, makeInbound, type RouteTemplate } from "./Inbound.ts"
import { otlpLogger } from "./Logging.ts"
import { type ExporterState, type ExportHealth, makeExportHealth, type Signal } from "./ExportHealth.ts"
import { Meter, prometheusName } from "./Metrics.ts"
import { makeTelemetry, Telemetry, type TelemetryApi } from "./Telemetry.ts"
import { encodeTraces } from "./OtlpProtobuf.ts"
import { type ExportedSpan, keyValues, makeTracer, type SvcTracer } from "./Tracing.ts"

/** What the HTTP servers need from telemetry. */
export interface TelemetryRuntimeShape {
  readonly api: TelemetryApi
  readonly settings: ResolvedTelemetry
  /** The inbound side of `service` (request id, server span, metrics, access log). */
  readonly inbound: (service: string, routes: ReadonlyArray<RouteTemplate>) => Inbound
  /** The Prometheus text of this process's metrics; undefined when the `/metrics` listener is off. */
  readonly scrape: (() => string) | undefined
  /** The state of each OTLP exporter (empty when nothing is exported), for `/healthz`. */
  readonly exporters: () => Record<string, ExporterState>
}

export class TelemetryRuntime extends Context.Service<TelemetryRuntime, TelemetryRuntimeShape>()(
  "@svc/server/telemetry/TelemetryRuntime"
) {}

/** The `service.name` of a process running `services`. */
export const serviceName = (settings: ResolvedTelemetry, services: ReadonlyArray<string>): string =>
  settings.serviceNameOverride ?? `${settings.serviceNamePrefix}-${services.join("+")}`

/** The OTLP resource attributes of this process (a fresh `service.instance.id` per call). */
export const resourceAttributes = (
  settings: ResolvedTelemetry,
  services: ReadonlyArray<string>
): Record<string, string> => ({
  ...settings.resourceAttributes,
  "service.name": serviceName(settings, services),
  "service.version": version,
  "service.instance.id": globalThis.crypto.randomUUID(),
  "telemetry.sdk.name": "svc",
  "telemetry.sdk.language": "nodejs"
})

/** The OTLP resource of this process. */
export const resource = (settings: ResolvedTelemetry, services: ReadonlyArray<string>) =>
  resourceOf(resourceAttributes(settings, services))

const resourceOf = (attributes: Record<string, string>) => ({
  attributes: keyValues(Object.entries(attributes)),
  droppedAttributesCount: 0
})

/** The Prometheus text of the metric registry in `meter`'s context (effect's formatter, svc's names). */
export const prometheusText = (meter: Meter): string =>
  PrometheusMetrics.formatUnsafe(meter.context, { metricNameMapper: prometheusName })

const scope = { name: "svc", version }

/** The HttpClient the exporters post with: gRPC forwarding (gRPC loaded only then) or fetch; observed. */
const transport = (settings: ResolvedTelemetry, health: ExportHealth): Layer.Layer<HttpClient.HttpClient> =>
  Layer.effect(HttpClient.HttpClient, Effect.map(HttpClient.HttpClient, health.observe)).pipe(
    Layer.provide(baseTransport(settings))
  )

const baseTransport = (settings: ResolvedTelemetry): Layer.Layer<HttpClient.HttpClient> =>
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

  const runtime = (
    api: TelemetryApi,
    tracer: SvcTracer | undefined,
    meter: Meter | undefined,
    health: ExportHealth | undefined
  ) =>
    TelemetryRuntime.of({
      api,
      settings,
      inbound: (service, routes) => makeInbound({ service, settings, routes, tracer, store: meter, accessLog }),
      scrape: settings.prometheus.enabled && meter !== undefined ? () => prometheusText(meter) : undefined,
      exporters: health === undefined ? () => ({}) : health.report
    })

  // The process's effect metric registry: the Effect counters of other modules record there too.
  const meterOf = Effect.gen(function* () {
    return new Meter(yield* Metric.MetricRegistry)
  })

  if (!exporting) {
    return Layer.unwrap(
      Effect.map(meterOf, (registryMeter) => {
        const meter = metering ? registryMeter : undefined
        const api = makeTelemetry(settings, undefined, meter, inboundSpanOf)
        return Layer.mergeAll(
          Layer.succeed(TelemetryRuntime, runtime(api, undefined, meter, undefined)),
          Layer.succeed(Telemetry, api)
        )
      })
    )
  }

  const headers = settings.protocol === "grpc" ? {} : settings.headers

  const signals: Array<Signal> = []
  if (tracing) signals.push("traces")
  if (exporting && settings.signals.metrics) signals.push("metrics")
  if (exportingLogs) signals.push("logs")

  return Layer.unwrap(
    Effect.gen(function* () {
      const registryMeter = yield* meterOf
      const meter = metering ? registryMeter : undefined
      const health = makeExportHealth(signals, meter)
      const attributes = resourceAttributes(settings, services)
      const otlpResource = resourceOf(attributes)
      const exporters = Effect.gen(function* () {
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
        if (meter !== undefined && settings.signals.metrics) {
          yield* OtlpMetrics.make({
            url: exportUrl(settings, "metrics"),
            resource: { attributes },
            headers,
            exportInterval: Duration.millis(settings.metricExportIntervalMs),
            temporality: settings.temporality,
            shutdownTimeout: Duration.seconds(3)
          }).pipe(Effect.provideService(Metric.MetricRegistry, registryMeter.registry))
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
        const api = makeTelemetry(settings, tracer, meter, inboundSpanOf)
        return Layer.mergeAll(
          Layer.succeed(TelemetryRuntime, runtime(api, tracer, meter, health)),
          Layer.succeed(Telemetry, api),
          tracer === undefined ? Layer.empty : Layer.succeed(Tracer.Tracer, tracer),
          logs === undefined ? Layer.empty : Logger.layer([otlpLogger(logs.push)], { mergeWithExisting: true })
        )
      })
      return Layer.unwrap(exporters).pipe(
        Layer.provide(OtlpExporter.layerFlusher),
        Layer.provide(OtlpSerialization.layerProtobuf),
        Layer.provide(transport(settings, health))
      )
    })
  )
}
