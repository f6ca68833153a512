/**
 * The inbound side of every HTTP server, called first by the Node server's one request listener
 * (`http/NodeServer.ts`), before the warm door and the router:
 * the `X-Request-Id` echoed or generated, the server span `HTTP {method}` (parent: a valid inbound
 * W3C `traceparent`, always honoured), `http.server.request.duration` and
 * `http.server.active_requests`, and the access log. Paths in `http.excludedPaths` get no span and
 * no metric. The route is the matching endpoint template of the service's API (`/api/v1/…/:id`),
 * so attributes stay low-cardinality; a path no endpoint declares has no `http.route`.
 *
 * Everything is plain code on the request's own events; the access-log line is formatted after
 * the answer is over and written in batches, off the request's critical section.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { Tracer } from "effect"
import type { ResolvedTelemetry } from "../config/TelemetryConfig.ts"
import { type AttributeValue, type BoundInstrument, type Meter, TupleCache } from "./Metrics.ts"
import { inboundSpanOf, type InboundRecord, records } from "./InboundSpans.ts"
import { instruments } from "./Telemetry.ts"
import {
  type ExportedSpan,
  httpSpanName,
  nowNanos,
  parseTraceparent,
  randomHex,
  StatusCode,
  type SvcTracer
} from "./Tracing.ts"
import { Exit } from "effect"

/** An endpoint template: method and path with `:param` segments. */
export interface RouteTemplate {
  readonly method: string
  readonly path: string
}

/** Finds the template of a request path (first match; `:x` matches one segment). */
export const routeMatcher = (templates: ReadonlyArray<RouteTemplate>) => {
  const compiled = templates.map((t) => ({
    method: t.method.toUpperCase(),
    path: t.path,
    segments: t.path.split("/")
  }))
  // Paths repeat (a connection's proxy route): the last few thousand answers are kept, by method
  // then path (no key string per lookup; null: no template).
  const cache = new Map<string, Map<string, string | null>>()
  let cached = 0
  const find = (method: string, path: string): string | undefined => {
    const segments = path.split("/")
    for (const t of compiled) {
      if (t.segments.length !== segments.length) continue
      if (t.method !== method && !(method === "HEAD" && t.method === "GET")) continue
      let ok = true
      for (let i = 0; i < segments.length; i++) {
        const s = t.segments[i]!
        if (s.startsWith(":") ? segments[i] === "" : s !== segments[i]) {
          ok = false
          break
        }
      }
      if (ok) return t.path
    }
    return undefined
  }
  return (method: string, path: string): string | undefined => {
    let byPath = cache.get(method)
    const known = byPath?.get(path)
    if (known !== undefined) return known ?? undefined
    const found = find(method, path)
    if (cached >= 4096) {
      cache.clear()
      cached = 0
      byPath = undefined
    }
    if (byPath === undefined) {
      byPath = new Map()
      cache.set(method, byPath)
    }
    byPath.set(path, found ?? null)
    cached++
    return found
  }
}

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * The request's id: a caller's `X-Request-Id` of up to 128 safe characters is echoed, anything
 * else is replaced by a fresh one; set on the response before the handler writes.
 */
export const ensureRequestId = (request: IncomingMessage, response: ServerResponse): string => {
  const given = request.headers["x-request-id"]
  const id = typeof given === "string" && requestIdPattern.test(given) ? given : randomHex(16)
  response.setHeader("x-request-id", id)
  return id
}

/** One finished request, for the access log. */
export interface AccessRecord {
  readonly service: string
  readonly method: string
  readonly path: string
  readonly route: string | undefined
  readonly status: number
  readonly durationMs: number
  readonly actorId: string | undefined
  readonly requestId: string
  readonly traceId: string | undefined
  readonly spanId: string | undefined
}

/** Access-log lines on stderr, formatted as the process logs (`log.format`), written in batches. */
export const accessLogWriter = (
  format: "text" | "json",
  write: (text: string) => void = (t) => process.stderr.write(t)
) => {
  let pending: Array<string> = []
  const flush = () => {
    const lines = pending
    pending = []
    write(lines.join(""))
  }
  return (r: AccessRecord) => {
    const timestamp = new Date().toISOString()
    const line =
      format === "json"
        ? `${JSON.stringify({
            message: "access",
            logLevel: "INFO",
            timestamp,
            service: r.service,
            method: r.method,
            path: r.path,
            route: r.route,
            status: r.status,
            duration_ms: Math.round(r.durationMs * 1000) / 1000,
            actor_id: r.actorId,
            request_id: r.requestId,
            trace_id: r.traceId,
            span_id: r.spanId
          })}\n`
        : `timestamp=${timestamp} level=INFO message=access service=${r.service} method=${r.method} path=${JSON.stringify(r.path)}${r.route === undefined ? "" : ` route=${r.route}`} status=${r.status} duration_ms=${r.durationMs.toFixed(3)} actor_id=${r.actorId ?? "-"} request_id=${r.requestId}${r.traceId === undefined ? "" : ` trace_id=${r.traceId} span_id=${r.spanId}`}\n`
    if (pending.length === 0) setImmediate(flush)
    pending.push(line)
  }
}

export interface Inbound {
  /** Called first for every request on a service's Node server. */
  readonly onRequest: (request: IncomingMessage, response: ServerResponse) => void
  /** The server span of a request (undefined when not traced). */
  readonly spanOf: (request: IncomingMessage) => Tracer.AnySpan | undefined
  /** The authenticated caller of a request, for the access log. */
  readonly noteActor: (request: IncomingMessage, actorId: string) => void
}

const pathOf = (url: string | undefined): string => {
  if (url === undefined) return "/"
  const mark = url.indexOf("?")
  return mark === -1 ? url : url.slice(0, mark)
}

/** Records the authenticated caller of `request` for its access-log line (nothing when not tracked). */
export const noteInboundActor = (request: IncomingMessage, actorId: string): void => {
  const record = records.get(request)
  if (record !== undefined) record.actorId = actorId
}

/** The inbound side of `service`; undefined pieces are off. */
export const makeInbound = (options: {
  readonly service: string
  readonly settings: ResolvedTelemetry
  readonly routes: ReadonlyArray<RouteTemplate>
  readonly tracer: SvcTracer | undefined
  readonly store: Meter | undefined
  readonly accessLog: ((record: AccessRecord) => void) | undefined
}): Inbound => {
  const { service, settings, tracer, store, accessLog } = options
  const m = store === undefined ? undefined : instruments(store)
  const route = routeMatcher(options.routes)
  const active = tracer !== undefined || m !== undefined || accessLog !== undefined
  // `http.server.active_requests` of each method, resolved once (methods are few; a caller's
  // made-up methods past the first 32 are resolved per request, as before).
  const activeByMethod = new Map<string, BoundInstrument>()
  const activeOf = (method: string): BoundInstrument | undefined => {
    if (m === undefined) return undefined
    let bound = activeByMethod.get(method)
    if (bound === undefined) {
      bound = m.serverActive.bind({ "http.request.method": method, "svc.service": service })
      if (activeByMethod.size < 32) activeByMethod.set(method, bound)
    }
    return bound
  }

  // `http.server.request.duration` by method, status and route, resolved once per combination.
  const durations = new TupleCache<BoundInstrument>()
  const durationOf = (method: string, status: number, template: string | undefined): BoundInstrument | undefined => {
    if (m === undefined) return undefined
    const known = durations.get(method, status, template)
    if (known !== undefined) return known
    const attributes: Record<string, AttributeValue> = {
      "http.request.method": method,
      "http.response.status_code": status,
      "svc.service": service
    }
    if (template !== undefined) attributes["http.route"] = template
    return durations.set(method, status, template, m.serverDuration.bind(attributes))
  }

  /** The answer is over (one listener for every response: the request's state is its record). */
  function onClose(this: ServerResponse) {
    const record = records.get(this.req) as Tracked | undefined
    if (record === undefined) return
    const { span, method, path } = record
    const status = this.statusCode
    const durationMs = performance.now() - record.started
    // A path no route declares (404s included) gets no route: it would be caller-chosen text.
    const template = status === 404 ? undefined : route(method, path)
    if (span !== undefined) {
      if (template !== undefined) span.attribute("http.route", template)
      span.attribute("http.response.status_code", status)
      if (!this.writableFinished) span.attribute("error.type", "connection_closed")
      // spec 7: 5xx sets the server span in error, 4xx leaves it unset.
      if (status >= 500) {
        span.attribute("error.type", String(status))
        span.statusCode = StatusCode.Error
      } else span.statusCode = StatusCode.Unset
      span.end(nowNanos(), Exit.void)
    }
    if (record.active !== undefined) {
      record.active.add(-1)
      durationOf(method, status, template)?.record(durationMs / 1000)
    }
    accessLog?.({
      service,
      method,
      path,
      route: template,
      status,
      durationMs,
      actorId: record.actorId,
      requestId: record.requestId,
      traceId: span?.sampled ? span.traceId : undefined,
      spanId: span?.sampled ? span.spanId : undefined
    })
  }

  const onRequest = (request: IncomingMessage, response: ServerResponse) => {
    const requestId = ensureRequestId(request, response)
    if (!active) return
    const path = pathOf(request.url)
    const excluded = settings.excludedPaths.has(path)
    if (excluded && accessLog === undefined) return
    const method = request.method ?? "GET"
    const started = performance.now()
    let span: ExportedSpan | undefined
    if (tracer !== undefined && !excluded) {
      span = tracer.start(httpSpanName(method), "server", parseTraceparent(firstOf(request.headers.traceparent)))
      span.attribute("http.request.method", method)
      span.attribute("url.path", path)
      span.attribute("svc.service", service)
    }
    const record = new Tracked(span, method, path, requestId, started, excluded ? undefined : activeOf(method))
    records.set(request, record)
    record.active?.add(1)
    response.on("close", onClose)
  }

  return {
    onRequest,
    spanOf: inboundSpanOf,
    noteActor: noteInboundActor
  }
}

/** What is kept of one inbound request until its answer is over. */
class Tracked implements InboundRecord {
  actorId: string | undefined = undefined
  readonly span: ExportedSpan | undefined
  readonly method: string
  readonly path: string
  readonly requestId: string
  readonly started: number
  /** `http.server.active_requests` of its method; undefined: no metric for this request. */
  readonly active: BoundInstrument | undefined
  constructor(
    span: ExportedSpan | undefined,
    method: string,
    path: string,
    requestId: string,
    started: number,
    active: BoundInstrument | undefined
  ) {
    this.span = span
    this.method = method
    this.path = path
    this.requestId = requestId
    this.started = started
    this.active = active
  }
}

const firstOf = (value: string | Array<string> | undefined) => (Array.isArray(value) ? value[0] : value)

export { inboundSpanOf }
