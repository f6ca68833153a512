/**
 * What the rest of svc calls to be observed (spec 8.3): one object per process, a reference
 * whose default is the no-op (telemetry off, or a test that provides nothing), so a feature
 * never needs to know whether telemetry is on and pays nothing when it is off.
 *
 * Everything here is plain code, callable from the data plane's fast path: starting and ending
 * an outbound span, the `traceparent` to inject, the client duration metric, the OAuth2
 * counters. Labels reach an attribute only through `proxy.spanAttributeLabels` (spans) and
 * `proxy.metricDimensionLabels` (metrics, values capped per key); the raw connector id is never a
 * metric attribute; no secret, token or credential is ever passed in.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Context, Exit, type Tracer } from "effect"
import type { ResolvedTelemetry } from "../config/TelemetryConfig.ts"
import {
  type Attributes,
  type AttributeValue,
  durationBoundaries,
  type Instrument,
  type Meter,
  sizeBoundaries,
  taskDurationBoundaries
} from "./Metrics.ts"
import { type Labels, LabelProjection } from "./LabelProjection.ts"
import { makeStartOutbound } from "./OutboundCalls.ts"
import { nowNanos, StatusCode, type SvcTracer } from "./Tracing.ts"

/** An outbound call svc makes for a connection (the proxy, probes, OAuth2 endpoints). */
export interface OutboundCall {
  /** Spec request type: `proxy`, `probe`, … */
  readonly requestType: string
  readonly method: string
  /** The upstream (only its host and port become attributes). */
  readonly url: URL
  readonly namespace: string
  readonly connectorId: string
  readonly connectorVersion: number
  readonly connectionId: string
  /** Effective label set in order (spec 8.3): connector labels, connection labels, request labels. */
  readonly connectorLabels?: Labels
  readonly connectionLabels?: Labels
  readonly requestLabels?: Labels
  /** The connector's `telemetry.propagateTraceContext`, when it sets one. */
  readonly propagateTraceContext?: boolean | undefined
  /** The span the call belongs to: the inbound request's (see `spanOf`) or the current Effect span. */
  readonly parent?: Tracer.AnySpan | undefined
  /** Request body length, when known. */
  readonly requestBodySize?: number | undefined
}

/** How an outbound call ended: an answer's status, or no answer (`error` says what happened). */
export interface OutboundOutcome {
  readonly status?: number | undefined
  /** A short error type (`timeout`, `connect_error`, …) when there was no answer; never a message with data. */
  readonly error?: string | undefined
  readonly responseBodySize?: number | undefined
}

export interface OutboundSpan {
  /** The W3C `traceparent` value to send upstream; undefined when nothing is to be injected. */
  readonly traceparent: string | undefined
  /** Ends the span and records the client metrics (idempotent). */
  readonly end: (outcome: OutboundOutcome) => void
}

export type OAuth2Operation = "token_exchange" | "refresh" | "revoke"

/**
 * The five OAuth2 counters of spec 8.3 (attributes: the result or reason, plus the labels of
 * `layers` projected through `proxy.metricDimensionLabels`: the connector's, then the connection's).
 */
export interface OAuth2Telemetry {
  readonly refreshAttempt: (result: "success" | "failure", layers?: ReadonlyArray<Labels>) => void
  readonly refreshFailure: (reason: string, layers?: ReadonlyArray<Labels>) => void
  readonly tokenExchangeAttempt: (result: "success" | "failure", layers?: ReadonlyArray<Labels>) => void
  readonly tokenExchangeFailure: (reason: string, layers?: ReadonlyArray<Labels>) => void
  readonly revocation: (
    kind: "refresh_token" | "access_token",
    result: "success" | "failure",
    layers?: ReadonlyArray<Labels>
  ) => void
}

/** The task queue (spec 8.3): durable tasks the worker runs. */
export interface QueueTelemetry {
  /** `svc.queue.task.duration`: a task ended (`result`: `completed` or `failed`) after `seconds`. */
  readonly taskEnded: (taskType: string, result: "completed" | "failed", seconds: number) => void
  /** `svc.queue.queue.size`: tasks of `taskType` not yet finished. */
  readonly queueSize: (taskType: string, size: number) => void
}

/** The inbound side, used by the HTTP servers. */
export interface InboundTelemetry {
  /** Called first for every request of `service` on its Node server. */
  readonly onRequest: (service: string, request: IncomingMessage, response: ServerResponse) => void
}

export interface TelemetryApi {
  /** Spans are exported (telemetry enabled with `signals.traces`). */
  readonly tracing: boolean
  /** Metrics are recorded (exported over OTLP, or scraped from `/metrics`). */
  readonly metering: boolean
  readonly tracer: SvcTracer | undefined
  readonly metrics: Meter | undefined
  /** The inbound span of a Node request (undefined when not traced). */
  readonly spanOf: (request: IncomingMessage) => Tracer.AnySpan | undefined
  readonly startOutbound: (call: OutboundCall) => OutboundSpan
  readonly oauth2: OAuth2Telemetry
  readonly queue: QueueTelemetry
  /** Starts one of svc's own internal spans (database, counter store, tasks, OAuth2) from plain code. */
  readonly startSpan: (name: string, parent: Tracer.AnySpan | undefined, attributes?: Attributes) => PlainSpan
}

/** A span started from plain code. */
export interface PlainSpan {
  readonly span: Tracer.AnySpan | undefined
  readonly end: (error?: string) => void
}

const noopOutbound: OutboundSpan = { traceparent: undefined, end: () => {} }
const noopPlain: PlainSpan = { span: undefined, end: () => {} }
const noopOAuth2: OAuth2Telemetry = {
  refreshAttempt: () => {},
  refreshFailure: () => {},
  tokenExchangeAttempt: () => {},
  tokenExchangeFailure: () => {},
  revocation: () => {}
}

const noopQueue: QueueTelemetry = { taskEnded: () => {}, queueSize: () => {} }

/** Telemetry off: every call returns at once. */
export const noopTelemetry: TelemetryApi = {
  tracing: false,
  metering: false,
  tracer: undefined,
  metrics: undefined,
  spanOf: () => undefined,
  startOutbound: () => noopOutbound,
  oauth2: noopOAuth2,
  queue: noopQueue,
  startSpan: () => noopPlain
}

/** The telemetry of this process (the no-op unless `Serve` provides the real one). */
export const Telemetry = Context.Reference<TelemetryApi>("@svc/server/telemetry/Telemetry", {
  defaultValue: () => noopTelemetry
})

/** The instruments of spec 8.3. */
export const instruments = (store: Meter) => ({
  serverDuration: store.instrument(
    {
      name: "http.server.request.duration",
      description: "Duration of inbound HTTP requests.",
      unit: "s",
      kind: "histogram"
    },
    durationBoundaries
  ),
  serverActive: store.instrument({
    name: "http.server.active_requests",
    description: "Inbound HTTP requests in flight.",
    unit: "{request}",
    kind: "updown"
  }),
  clientDuration: store.instrument(
    {
      name: "svc.client.request.duration",
      description: "Duration of outbound calls svc makes for connections.",
      unit: "s",
      kind: "histogram"
    },
    durationBoundaries
  ),
  clientRequestSize: store.instrument(
    {
      name: "svc.client.request.body.size",
      description: "Request body size of outbound calls (when Content-Length is known).",
      unit: "By",
      kind: "histogram"
    },
    sizeBoundaries
  ),
  clientResponseSize: store.instrument(
    {
      name: "svc.client.response.body.size",
      description: "Response body size of outbound calls (when Content-Length is known).",
      unit: "By",
      kind: "histogram"
    },
    sizeBoundaries
  ),
  refreshAttempts: store.instrument({
    name: "svc.oauth2.refresh.attempts.total",
    description: "OAuth2 token refresh attempts by result.",
    unit: "1",
    kind: "counter"
  }),
  refreshFailures: store.instrument({
    name: "svc.oauth2.refresh.failures.total",
    description: "OAuth2 token refresh failures by reason.",
    unit: "1",
    kind: "counter"
  }),
  revocations: store.instrument({
    name: "svc.oauth2.revocations.total",
    description: "OAuth2 token revocations by kind and result.",
    unit: "1",
    kind: "counter"
  }),
  exchangeAttempts: store.instrument({
    name: "svc.oauth2.token_exchange.attempts.total",
    description: "OAuth2 authorization-code token exchanges by result.",
    unit: "1",
    kind: "counter"
  }),
  exchangeFailures: store.instrument({
    name: "svc.oauth2.token_exchange.failures.total",
    description: "OAuth2 authorization-code token exchange failures by reason.",
    unit: "1",
    kind: "counter"
  }),
  taskDuration: store.instrument(
    {
      name: "svc.queue.task.duration",
      description: "Duration of durable tasks from their creation to their end, by type and result.",
      unit: "s",
      kind: "histogram"
    },
    taskDurationBoundaries
  ),
  queueSize: store.instrument({
    name: "svc.queue.queue.size",
    description: "Durable tasks not yet finished, by type.",
    unit: "{task}",
    kind: "gauge"
  })
})

export type Instruments = ReturnType<typeof instruments>

const noLayers: ReadonlyArray<Labels> = []

/**
 * The live telemetry over `tracer` (undefined: traces off) and `store` (undefined: metrics off),
 * with the label rules and the outbound propagation default of `settings`.
 */
export const makeTelemetry = (
  settings: ResolvedTelemetry,
  tracer: SvcTracer | undefined,
  store: Meter | undefined,
  spanOf: (request: IncomingMessage) => Tracer.AnySpan | undefined
): TelemetryApi => {
  if (tracer === undefined && store === undefined) return noopTelemetry
  const labels = new LabelProjection(
    settings.spanAttributeLabels,
    settings.metricDimensionLabels,
    settings.metricDimensionValueCap
  )
  const m = store === undefined ? undefined : instruments(store)

  const startOutbound = makeStartOutbound(settings, tracer, m, labels)

  const counted =
    (instrument: ((m: Instruments) => Instrument) | undefined, key: string) =>
    (value: string, layers: ReadonlyArray<Labels> = noLayers) => {
      if (m === undefined || instrument === undefined) return
      const attributes: Record<string, AttributeValue> = { [key]: value }
      labels.metricAttributes(layers, attributes)
      instrument(m).add(1, attributes)
    }

  const oauth2: OAuth2Telemetry =
    m === undefined
      ? noopOAuth2
      : {
          refreshAttempt: counted((i) => i.refreshAttempts, "result"),
          refreshFailure: counted((i) => i.refreshFailures, "reason"),
          tokenExchangeAttempt: counted((i) => i.exchangeAttempts, "result"),
          tokenExchangeFailure: counted((i) => i.exchangeFailures, "reason"),
          revocation: (kind, result, layers = noLayers) => {
            const attributes: Record<string, AttributeValue> = { revocation_kind: kind, result }
            labels.metricAttributes(layers, attributes)
            m.revocations.add(1, attributes)
          }
        }

  const queue: QueueTelemetry =
    m === undefined
      ? noopQueue
      : {
          taskEnded: (taskType, result, seconds) =>
            m.taskDuration.record(seconds, { "svc.queue.task_type": taskType, result }),
          queueSize: (taskType, size) => m.queueSize.set(size, { "svc.queue.task_type": taskType })
        }

  const startSpan = (name: string, parent: Tracer.AnySpan | undefined, attributes?: Attributes): PlainSpan => {
    if (tracer === undefined) return noopPlain
    const span = tracer.start(name, "internal", parent, attributes)
    return {
      span,
      end: (error) => {
        if (error !== undefined) {
          span.attribute("error.type", error)
          span.statusCode = StatusCode.Error
        }
        span.end(tracerNow(), successExit)
      }
    }
  }

  return {
    tracing: tracer !== undefined,
    metering: store !== undefined,
    tracer,
    metrics: store,
    spanOf,
    startOutbound,
    oauth2,
    queue,
    startSpan
  }
}

const successExit = Exit.void
const tracerNow = nowNanos
