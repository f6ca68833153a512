/**
 * The `telemetry` block of spec 8.3 resolved against the standard OpenTelemetry environment
 * variables (YAML wins): whether anything is exported, where, how, and which labels become
 * attributes. An enabled block whose endpoint resolves to the empty string is soft-disabled:
 * no-op providers and nothing logged. Header values are secrets (collector API keys): they are
 * never logged and never part of an error.
 */
import type { ConfigFile } from "./ConfigSchema.ts"

export type OtlpProtocol = "grpc" | "http/protobuf"

export interface ResolvedTelemetry {
  /** `enabled: true` and a non-empty endpoint; false gives no-op providers everywhere. */
  readonly enabled: boolean
  /** `telemetry.enabled` as configured (true with an empty endpoint is the soft-disabled case). */
  readonly configured: boolean
  readonly protocol: OtlpProtocol
  /** The collector: `host:port` or a URL; for http/protobuf the base the signal paths are appended to. */
  readonly endpoint: string
  /** Sent with every export (gRPC metadata or HTTP headers); never logged. */
  readonly headers: Readonly<Record<string, string>>
  /** Plain-text connection to the collector (no TLS). */
  readonly insecure: boolean
  readonly serviceNamePrefix: string
  /** `OTEL_SERVICE_NAME`, used only when the file sets no `resource.serviceNamePrefix`. */
  readonly serviceNameOverride: string | undefined
  /** Static resource attributes: `OTEL_RESOURCE_ATTRIBUTES` under `resource.attributes`. */
  readonly resourceAttributes: Readonly<Record<string, string | number | boolean>>
  /** Parent-based head sampling ratio of new traces, 0 to 1. */
  readonly samplingRatio: number
  readonly signals: { readonly traces: boolean; readonly metrics: boolean; readonly logs: boolean }
  /** Request paths left out of inbound spans and metrics. */
  readonly excludedPaths: ReadonlySet<string>
  readonly spanAttributeLabels: ReadonlyArray<string>
  readonly metricDimensionLabels: ReadonlyArray<string>
  /** Distinct values kept per label key (per process) before the rest collapse to `other`; undefined: no cap. */
  readonly metricDimensionValueCap: number | undefined
  /** Send W3C `traceparent` on outbound proxy calls unless the connector says otherwise. */
  readonly injectOutboundDefault: boolean
  /** `OTEL_METRIC_EXPORT_INTERVAL` (ms), default 60 s. */
  readonly metricExportIntervalMs: number
  /** `OTEL_BSP_SCHEDULE_DELAY` (ms), default 5 s: how often ended spans are sent. */
  readonly traceExportIntervalMs: number
  /** `OTEL_BLRP_SCHEDULE_DELAY` (ms), default 1 s: how often log records are sent. */
  readonly logExportIntervalMs: number
  /** `OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE`. */
  readonly temporality: "cumulative" | "delta"
  /**
   * `telemetry.prometheus`: `GET /metrics` on a listener of its own (off by default), never on a
   * service's port; loopback unless the operator says otherwise.
   */
  readonly prometheus: PrometheusListener
}

/** The Prometheus scrape listener of a process (`telemetry.prometheus`). */
export interface PrometheusListener {
  readonly enabled: boolean
  /** Default `127.0.0.1`: the scrape is not public (SECURITY.md). */
  readonly host: string
  /** Default 9464 (the OpenTelemetry Prometheus exporter's port); 0 asks the system for one. */
  readonly port: number
}

/** `telemetry.prometheus.host` when unset: loopback only. */
export const defaultPrometheusHost = "127.0.0.1"
/** `telemetry.prometheus.port` when unset: the OpenTelemetry Prometheus exporter's customary port. */
export const defaultPrometheusPort = 9464

type Env = Readonly<Record<string, string | undefined>>

type EnvValue = string | { readonly envVar: string; readonly default?: string | undefined }

const fromEnvValue = (value: EnvValue, env: Env): string =>
  typeof value === "string" ? value : (env[value.envVar] ?? value.default ?? "")

const decode = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** `k1=v1,k2=v2` (W3C baggage-like, percent-encoded) as OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES write it. */
export const parseKeyValueList = (text: string | undefined): Record<string, string> => {
  const out: Record<string, string> = {}
  if (text === undefined) return out
  for (const entry of text.split(",")) {
    const equals = entry.indexOf("=")
    if (equals <= 0) continue
    const key = decode(entry.slice(0, equals).trim())
    if (key === "") continue
    out[key] = decode(entry.slice(equals + 1).trim())
  }
  return out
}

const protocolOf = (text: string | undefined): OtlpProtocol | undefined =>
  text === "grpc" || text === "http/protobuf" ? text : undefined

const positiveIntOf = (text: string | undefined): number | undefined => {
  if (text === undefined || !/^\d+$/.test(text.trim())) return undefined
  const n = Number(text.trim())
  return n > 0 ? n : undefined
}

/** The telemetry settings the process runs with; `problems` collects invalid combinations. */
export const resolveTelemetry = (
  block: ConfigFile["telemetry"],
  env: Env,
  problems: Array<string>
): ResolvedTelemetry => {
  const t = block ?? {}
  const configured = t.enabled ?? false
  const exporter = t.exporter ?? {}
  const endpoint = (
    exporter.endpoint !== undefined ? fromEnvValue(exporter.endpoint, env) : (env.OTEL_EXPORTER_OTLP_ENDPOINT ?? "")
  ).trim()
  const envProtocol = env.OTEL_EXPORTER_OTLP_PROTOCOL
  if (exporter.protocol === undefined && envProtocol !== undefined && protocolOf(envProtocol) === undefined) {
    problems.push("OTEL_EXPORTER_OTLP_PROTOCOL: must be grpc or http/protobuf")
  }
  const headers: Record<string, string> = { ...parseKeyValueList(env.OTEL_EXPORTER_OTLP_HEADERS) }
  for (const [name, value] of Object.entries(exporter.headers ?? {})) {
    const resolved = fromEnvValue(value, env)
    if (resolved !== "") headers[name.toLowerCase()] = resolved
  }
  const cap = t.proxy?.metricDimensionValueCap
  const temporality = env.OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE?.trim().toLowerCase()
  return {
    enabled: configured && endpoint !== "",
    configured,
    protocol: exporter.protocol ?? protocolOf(envProtocol) ?? "grpc",
    endpoint,
    headers,
    insecure: exporter.insecure ?? false,
    serviceNamePrefix: t.resource?.serviceNamePrefix ?? "svc",
    serviceNameOverride: t.resource?.serviceNamePrefix === undefined ? env.OTEL_SERVICE_NAME : undefined,
    resourceAttributes: { ...parseKeyValueList(env.OTEL_RESOURCE_ATTRIBUTES), ...t.resource?.attributes },
    samplingRatio: t.sampling?.ratio ?? 1,
    signals: {
      traces: t.signals?.traces ?? true,
      metrics: t.signals?.metrics ?? true,
      logs: t.signals?.logs ?? true
    },
    excludedPaths: new Set(t.http?.excludedPaths ?? ["/ping", "/healthz", "/livez", "/readyz"]),
    spanAttributeLabels: t.proxy?.spanAttributeLabels ?? [],
    metricDimensionLabels: t.proxy?.metricDimensionLabels ?? [],
    // spec 8.1: off unless a positive integer is set
    metricDimensionValueCap: cap !== undefined && cap > 0 ? cap : undefined,
    injectOutboundDefault: t.propagation?.injectOutboundDefault ?? false,
    metricExportIntervalMs: positiveIntOf(env.OTEL_METRIC_EXPORT_INTERVAL) ?? 60_000,
    traceExportIntervalMs: positiveIntOf(env.OTEL_BSP_SCHEDULE_DELAY) ?? 5_000,
    logExportIntervalMs: positiveIntOf(env.OTEL_BLRP_SCHEDULE_DELAY) ?? 1_000,
    temporality: temporality === "delta" ? "delta" : "cumulative",
    prometheus: {
      enabled: t.prometheus?.enabled ?? false,
      host: t.prometheus?.host ?? defaultPrometheusHost,
      port: t.prometheus?.port ?? defaultPrometheusPort
    }
  }
}
