/**
 * The outbound side of spec 8.3 (`TelemetryApi.startOutbound`): the client span `HTTP {method}` of
 * an outbound call (svc.* attributes, projected labels), its W3C `traceparent` when propagated, and
 * the client metrics when it ends. On the data plane's path (one per proxied request), so it is
 * written to allocate little: the span's attributes go straight into the span, the span name is
 * kept per method, and without metric labels the three client instruments are resolved once per
 * method, request type and status (or error type) instead of per call.
 */
import { Exit } from "effect"
import type { ResolvedTelemetry } from "../config/TelemetryConfig.ts"
import type { Labels, LabelProjection } from "./LabelProjection.ts"
import { type AttributeValue, type BoundInstrument, TupleCache } from "./Metrics.ts"
import type { Instruments, OutboundCall, OutboundOutcome, OutboundSpan } from "./Telemetry.ts"
import { type ExportedSpan, httpSpanName, nowNanos, StatusCode, type SvcTracer, traceparentOf } from "./Tracing.ts"

/** The three client instruments of one attribute set. */
interface ClientSeries {
  readonly duration: BoundInstrument
  readonly requestSize: BoundInstrument
  readonly responseSize: BoundInstrument
}

const layersOf = (call: OutboundCall): ReadonlyArray<Labels> => [
  call.connectorLabels,
  call.connectionLabels,
  call.requestLabels
]

/** `startOutbound` over `tracer` (undefined: no spans) and `m` (undefined: no metrics). */
export const makeStartOutbound = (
  settings: ResolvedTelemetry,
  tracer: SvcTracer | undefined,
  m: Instruments | undefined,
  labels: LabelProjection
): ((call: OutboundCall) => OutboundSpan) => {
  const spanLabels = labels.spanKeys.length > 0
  const metricLabels = labels.metricKeys.length > 0
  // Without metric labels the attribute set is method, request type and status (or error type):
  // its series are resolved once per combination.
  const byStatus = new TupleCache<ClientSeries>()
  const byError = new TupleCache<ClientSeries>()

  const seriesOf = (attributes: Record<string, AttributeValue>): ClientSeries | undefined =>
    m === undefined
      ? undefined
      : {
          duration: m.clientDuration.bind(attributes),
          requestSize: m.clientRequestSize.bind(attributes),
          responseSize: m.clientResponseSize.bind(attributes)
        }

  const attributesOf = (call: OutboundCall, outcome: OutboundOutcome): Record<string, AttributeValue> => {
    const attributes: Record<string, AttributeValue> = {
      "http.request.method": call.method,
      "svc.request.type": call.requestType
    }
    if (outcome.status !== undefined) attributes["http.response.status_code"] = outcome.status
    else attributes["error.type"] = outcome.error ?? "_OTHER"
    if (metricLabels) labels.metricAttributes(layersOf(call), attributes)
    return attributes
  }

  const clientSeries = (call: OutboundCall, outcome: OutboundOutcome): ClientSeries | undefined => {
    if (metricLabels) return seriesOf(attributesOf(call, outcome))
    const { method, requestType } = call
    if (outcome.status !== undefined) {
      return (
        byStatus.get(method, requestType, outcome.status) ??
        byStatus.set(method, requestType, outcome.status, seriesOf(attributesOf(call, outcome)) as ClientSeries)
      )
    }
    const error = outcome.error ?? "_OTHER"
    return (
      byError.get(method, requestType, error) ??
      byError.set(method, requestType, error, seriesOf(attributesOf(call, outcome)) as ClientSeries)
    )
  }

  /** One outbound call in flight. */
  class Outbound implements OutboundSpan {
    readonly traceparent: string | undefined
    private readonly call: OutboundCall
    private readonly span: ExportedSpan | undefined
    private readonly started: number
    private ended = false

    constructor(call: OutboundCall, span: ExportedSpan | undefined, traceparent: string | undefined) {
      this.call = call
      this.span = span
      this.traceparent = traceparent
      this.started = performance.now()
    }

    end(outcome: OutboundOutcome): void {
      if (this.ended) return
      this.ended = true
      const { span, call } = this
      if (span !== undefined) {
        if (outcome.status !== undefined) {
          span.attribute("http.response.status_code", outcome.status)
          if (outcome.status >= 400) span.attribute("error.type", String(outcome.status))
          span.statusCode = outcome.status >= 500 ? StatusCode.Error : StatusCode.Unset
        } else {
          span.attribute("error.type", outcome.error ?? "_OTHER")
          span.statusCode = StatusCode.Error
        }
        span.end(nowNanos(), Exit.void)
      }
      if (m === undefined) return
      const series = clientSeries(call, outcome)
      if (series === undefined) return
      series.duration.record((performance.now() - this.started) / 1000)
      if (call.requestBodySize !== undefined) series.requestSize.record(call.requestBodySize)
      if (outcome.responseBodySize !== undefined) series.responseSize.record(outcome.responseBodySize)
    }
  }

  return (call) => {
    let span: ExportedSpan | undefined
    if (tracer !== undefined) {
      span = tracer.start(httpSpanName(call.method), "client", call.parent)
      if (span.sampled) {
        const url = call.url
        span.attribute("http.request.method", call.method)
        span.attribute("server.address", url.hostname)
        span.attribute("svc.request.type", call.requestType)
        span.attribute("svc.namespace", call.namespace)
        span.attribute("svc.connector_id", call.connectorId)
        span.attribute("svc.connector_version", call.connectorVersion)
        span.attribute("svc.connection_id", call.connectionId)
        const port = url.port
        if (port !== "") span.attribute("server.port", Number(port))
        if (spanLabels) {
          const projected: Record<string, AttributeValue> = {}
          labels.spanAttributes(layersOf(call), projected)
          for (const key in projected) span.attribute(key, projected[key])
        }
      }
    }
    const propagate = call.propagateTraceContext ?? settings.injectOutboundDefault
    return new Outbound(call, span, span !== undefined && propagate ? traceparentOf(span) : undefined)
  }
}
