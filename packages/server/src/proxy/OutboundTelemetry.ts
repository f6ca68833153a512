/**
 * The telemetry stage of the exchange (spec 8.3; ARCHITECTURE "request path": request log →
 * telemetry → …), for both doors alike: when credentials are in place the outbound
 * span `HTTP {method}` starts (svc.* attributes, projected labels) and, when the connector's
 * `telemetry.propagateTraceContext` (else `propagation.injectOutboundDefault`) says so, its W3C
 * `traceparent` joins the upstream headers; when the exchange is recorded the span ends with the
 * answer's status and `svc.client.request.duration` is recorded. Undefined with telemetry off:
 * the exchange then calls nothing of this.
 */
import type { Tracer } from "effect"
import type { InjectedRequest } from "../outbound/CredentialInjection.ts"
import type { OutboundSpan, TelemetryApi } from "../telemetry/Telemetry.ts"
import type { ProxyTarget } from "./ProxyTargets.ts"
import type { CallerRequest } from "./Route.ts"

const lengthOf = (value: unknown): number | undefined => {
  const text = Array.isArray(value) ? value[0] : value
  if (typeof text !== "string" || !/^\d+$/.test(text)) return undefined
  return Number(text)
}

export interface OutboundTelemetry {
  /**
   * After credential injection, before the send: starts the span under `parent` (the request's
   * server span), adds `traceparent` when due.
   */
  readonly started: <I extends InjectedRequest | E, E>(
    target: ProxyTarget,
    request: CallerRequest,
    injected: I,
    parent: Tracer.AnySpan | undefined
  ) => I
  /** With the exchange's event: ends the span (`status` undefined: no answer). */
  readonly ended: (
    request: CallerRequest,
    status: number | undefined,
    headers: Readonly<Record<string, unknown>> | undefined
  ) => void
}

/** A credential injection's result (not its failure). */
const isInjected = (value: unknown): value is InjectedRequest =>
  typeof value === "object" && value !== null && "injected" in value

export const outboundTelemetry = (telemetry: TelemetryApi): OutboundTelemetry | undefined => {
  if (!telemetry.tracing && !telemetry.metering) return undefined
  const spans = new WeakMap<CallerRequest, OutboundSpan>()
  return {
    started: (target, request, injected, parent) => {
      if (!isInjected(injected)) return injected
      const sent: InjectedRequest = injected
      const row = target.row
      const span = telemetry.startOutbound({
        requestType: "proxy",
        method: request.method,
        url: sent.url,
        namespace: row.namespace,
        connectorId: row.connectorId,
        connectorVersion: row.connectorVersion,
        connectionId: row.id,
        connectorLabels: target.connectorLabels,
        connectionLabels: row.labels,
        requestLabels: request.labels,
        propagateTraceContext: target.definition.telemetry?.propagateTraceContext,
        parent,
        // The caller's `content-length` is not among the forwarded headers: the route's own count.
        requestBodySize: request.bodySize
      })
      spans.set(request, span)
      if (span.traceparent !== undefined) sent.headers.traceparent = span.traceparent
      return injected
    },
    ended: (request, status, headers) => {
      const span = spans.get(request)
      if (span === undefined) return
      spans.delete(request)
      span.end({
        status,
        error: status === undefined ? "upstream_unreachable" : undefined,
        responseBodySize: headers === undefined ? undefined : lengthOf(headers["content-length"])
      })
    }
  }
}
