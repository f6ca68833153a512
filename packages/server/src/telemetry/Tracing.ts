/**
 * The tracer of spec 8.3: spans with the spec's names are exported over OTLP, the rest of the
 * Effect spans of the code base (`Effect.fn` names, internal helpers) are transparent: they
 * create nothing, and a span started under one hangs from the nearest exported ancestor, so the
 * exported tree is exactly the spec's (inbound → outbound, database, OAuth2, tasks).
 *
 * Sampling is parent-based head sampling: a span with a parent (also one decoded from an
 * inbound `traceparent`) follows the parent's decision; a new trace is sampled with probability
 * `ratio`. Attributes of spans svc does not create itself are kept only when their key is on an
 * allowlist (database spans keep their names, never their statements), and exception events carry
 * the error's type and message, never a stack.
 */
import { Cause, Context, type Exit, Fiber, Option, Tracer } from "effect"
import { requestSpanOf } from "./InboundSpans.ts"
import type { EncodableSpan } from "./OtlpProtobuf.ts"

/**
 * 8 or 16 random bytes as hex digits. The CSPRNG fills 4 KiB at a time, hex-encoded once; an id
 * is a slice of that text (no native call, no copy per id) and each byte is used once.
 */
const pool = Buffer.allocUnsafe(4096)
let hexPool = ""
let hexOffset = 0

export const randomHex = (bytes: 8 | 16): string => {
  const digits = bytes * 2
  if (hexOffset + digits > hexPool.length) {
    globalThis.crypto.getRandomValues(pool)
    hexPool = pool.toString("hex")
    pool.fill(0)
    hexOffset = 0
  }
  const out = hexPool.slice(hexOffset, hexOffset + digits)
  hexOffset += digits
  return out
}

const kindNumber = { unspecified: 0, internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const

export const StatusCode = { Unset: 0, Ok: 1, Error: 2 } as const
export type StatusCode = (typeof StatusCode)[keyof typeof StatusCode]

/** Span names svc exports besides every server and client span. */
const exportedPrefixes = ["HTTP ", "oauth2.", "svc.queue.", "counter_store.", "db."]

export const isExportedName = (name: string, kind: Tracer.SpanKind): boolean =>
  kind !== "internal" || exportedPrefixes.some((p) => name.startsWith(p))

/** Attribute keys kept on spans svc did not create itself (libraries: SQL client, HTTP client). */
const foreignAttributeAllowed = (key: string): boolean =>
  key.startsWith("svc.") ||
  key === "db.system.name" ||
  key === "db.namespace" ||
  key === "db.operation.name" ||
  key === "db.collection.name" ||
  key === "server.address" ||
  key === "server.port" ||
  key === "http.request.method" ||
  key === "http.response.status_code" ||
  key === "http.route" ||
  key === "url.path" ||
  key === "error.type"

type Value = string | number | boolean

const anyValue = (value: unknown) => {
  switch (typeof value) {
    case "string":
      return { stringValue: value }
    case "boolean":
      return { boolValue: value }
    case "number":
      return Number.isInteger(value) ? { intValue: value } : { doubleValue: value }
    case "bigint":
      return { intValue: Number(value) }
    default:
      return { stringValue: String(value) }
  }
}

export const keyValues = (entries: Iterable<readonly [string, unknown]>) => {
  const out: Array<{ key: string; value: ReturnType<typeof anyValue> }> = []
  for (const [key, value] of entries) out.push({ key, value: anyValue(value) })
  return out
}

/** Where ended sampled spans go (encoded later, off the request, by the exporter). */
export interface SpanSink {
  readonly push: (span: ExportedSpan) => void
}

/** The first error of a failed exit: its type and message (no stack, no cause chain). */
const failureOf = (exit: Exit.Exit<unknown, unknown>): { type: string; message: string } | undefined => {
  if (exit._tag === "Success" || Cause.hasInterruptsOnly(exit.cause)) return undefined
  const first = Cause.prettyErrors(exit.cause)[0]
  return first === undefined ? undefined : { type: first.name, message: first.message }
}

const noLinks: ReadonlyArray<Tracer.SpanLink> = []

/**
 * A span exported over OTLP. Cheap to start and end on the data plane (two per proxied request):
 * attributes are a flat list (key, value, key, value…), the parent, `status` and the `attributes`
 * map of effect's `Span` interface are built only when something reads them, links only when added.
 */
export class ExportedSpan implements Tracer.Span, EncodableSpan {
  readonly _tag = "Span"
  readonly traceId: string
  readonly spanId: string
  /** Attributes as key, value, key, value…, in the order first set (a key set again keeps its place). */
  readonly attributeList: Array<unknown> = []
  /** Set by svc's own instrumentation; undefined: derived from the exit. */
  statusCode: StatusCode | undefined = undefined
  statusMessage: string | undefined = undefined
  exception: { readonly type: string; readonly message: string } | undefined = undefined
  readonly startNanos: bigint
  endNanos = 0n
  readonly name: string
  readonly parentSpan: Tracer.AnySpan | undefined
  readonly parentSpanId: string | undefined
  readonly annotations: Context.Context<never>
  readonly kind: Tracer.SpanKind
  readonly kindNumber: number
  readonly sampled: boolean
  /** svc's own span: every attribute kept (svc only sets safe ones). */
  readonly own: boolean
  /**
   * An RPC span of effect's cluster (the workflow engine's entity calls, runner messages): client
   * or server kind, yet none of the spec's spans. It is known by its `rpc.*` attributes, set as it
   * starts; it is then never exported and its children hang from its parent.
   */
  dropped = false
  private exit: Exit.Exit<unknown, unknown> | undefined = undefined
  private linkList: Array<Tracer.SpanLink> | undefined
  private statusCache: Tracer.SpanStatus | undefined = undefined
  private readonly sink: SpanSink

  constructor(
    name: string,
    parent: Tracer.AnySpan | undefined,
    annotations: Context.Context<never>,
    links: Array<Tracer.SpanLink> | undefined,
    startTime: bigint,
    kind: Tracer.SpanKind,
    sampled: boolean,
    own: boolean,
    sink: SpanSink
  ) {
    this.name = name
    this.parentSpan = parent
    this.annotations = annotations
    this.kind = kind
    this.kindNumber = kindNumber[kind]
    this.sampled = sampled
    this.own = own
    this.sink = sink
    this.linkList = links !== undefined && links.length > 0 ? links : undefined
    this.startNanos = startTime
    this.traceId = parent !== undefined ? parent.traceId : randomHex(16)
    this.parentSpanId = parent !== undefined ? parent.spanId : undefined
    this.spanId = randomHex(8)
  }

  get parent(): Option.Option<Tracer.AnySpan> {
    return Option.fromUndefinedOr(this.parentSpan)
  }

  get status(): Tracer.SpanStatus {
    const exit = this.exit
    if (exit === undefined) this.statusCache ??= { _tag: "Started", startTime: this.startNanos }
    else if (this.statusCache?._tag !== "Ended")
      this.statusCache = { _tag: "Ended", startTime: this.startNanos, endTime: this.endNanos, exit }
    return this.statusCache as Tracer.SpanStatus
  }

  /** The attributes as a map (a copy; the encoder reads `attributeList`). */
  get attributes(): ReadonlyMap<string, unknown> {
    const out = new Map<string, unknown>()
    const list = this.attributeList
    for (let i = 0; i < list.length; i += 2) out.set(list[i] as string, list[i + 1])
    return out
  }

  get links(): ReadonlyArray<Tracer.SpanLink> {
    return this.linkList ?? noLinks
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.exit !== undefined) return
    this.exit = exit
    this.endNanos = endTime
    if (!this.sampled || this.dropped) return
    const failure = failureOf(exit)
    if (failure !== undefined) {
      // A defect or failure escaping the span: an exception event, then the span is in error.
      this.exception = failure
      if (this.statusCode === undefined) {
        this.statusCode = StatusCode.Error
        this.statusMessage = failure.message
      }
    }
    this.statusCode ??= StatusCode.Unset
    if (this.statusCode !== StatusCode.Error) this.statusMessage = undefined
    this.sink.push(this)
  }

  attribute(key: string, value: unknown): void {
    if (!this.own && (key === "rpc.system.name" || key === "rpc.method")) this.dropped = true
    if (this.exit !== undefined || !this.sampled) return
    if (!this.own && !foreignAttributeAllowed(key)) return
    const list = this.attributeList
    for (let i = 0; i < list.length; i += 2) {
      if (list[i] === key) {
        list[i + 1] = value
        return
      }
    }
    list.push(key, value)
  }

  /** Span events from library code (log messages among them) are not exported: they may carry data. */
  event(): void {}

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    if (this.exit !== undefined) return
    this.linkList = [...(this.linkList ?? []), ...links]
  }
}

const noIds = { traceId: "", spanId: "", sampled: false }

/**
 * An Effect span that is not exported: its ids and sampling decision are those of the nearest
 * exported ancestor (none: empty ids, not sampled), so logs and child spans see that one.
 */
export class TransparentSpan implements Tracer.Span {
  readonly _tag = "Span"
  readonly attributes: ReadonlyMap<string, unknown> = new Map()
  readonly links: ReadonlyArray<Tracer.SpanLink> = []
  status: Tracer.SpanStatus
  private readonly real: Tracer.AnySpan | typeof noIds
  readonly name: string
  readonly parent: Option.Option<Tracer.AnySpan>
  readonly annotations: Context.Context<never>
  readonly kind: Tracer.SpanKind
  constructor(
    name: string,
    parent: Option.Option<Tracer.AnySpan>,
    annotations: Context.Context<never>,
    kind: Tracer.SpanKind,
    effective: Option.Option<Tracer.AnySpan>,
    startTime: bigint
  ) {
    this.name = name
    this.parent = parent
    this.annotations = annotations
    this.kind = kind
    this.real = effective._tag === "Some" ? effective.value : noIds
    this.status = { _tag: "Started", startTime }
  }
  get traceId() {
    return this.real.traceId
  }
  get spanId() {
    return this.real.spanId
  }
  get sampled() {
    return this.real.sampled
  }
  /** The exported span this one stands for, if any. */
  get effective(): Option.Option<Tracer.AnySpan> {
    return this.real === noIds ? Option.none() : Option.some(this.real as Tracer.AnySpan)
  }
  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.status._tag === "Ended") return
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
  }
  attribute(): void {}
  event(): void {}
  addLinks(): void {}
}

/**
 * The nearest ancestor that is exported (or external, from an inbound `traceparent`); a span of
 * another tracer (one started before telemetry was installed) is no parent.
 */
export const effectiveParent = (parent: Option.Option<Tracer.AnySpan>): Option.Option<Tracer.AnySpan> => {
  if (parent._tag === "None") return parent
  const span = parent.value
  if (span instanceof TransparentSpan) return span.effective
  if (span instanceof ExportedSpan && span.dropped) return Option.fromUndefinedOr(span.parentSpan)
  return span instanceof ExportedSpan || span._tag === "ExternalSpan" ? parent : Option.none()
}

/** Nanoseconds since the epoch, with sub-millisecond precision. */
const origin = BigInt(Math.round(performance.timeOrigin * 1_000_000))
export const nowNanos = (): bigint => origin + BigInt(Math.round(performance.now() * 1_000_000))

export interface SvcTracer extends Tracer.Tracer {
  /** Starts one of svc's own spans (from plain code as well as Effect code). */
  readonly start: (
    name: string,
    kind: Tracer.SpanKind,
    parent: Tracer.AnySpan | undefined,
    attributes?: Readonly<Record<string, Value>>
  ) => ExportedSpan
}

/** The tracer over `sink`, sampling new traces at `ratio`. */
export const makeTracer = (sink: SpanSink, ratio: number): SvcTracer => {
  const decide = (parent: Option.Option<Tracer.AnySpan>): boolean =>
    parent._tag === "Some" ? parent.value.sampled : ratio >= 1 ? true : ratio <= 0 ? false : Math.random() < ratio
  const start: SvcTracer["start"] = (name, kind, parentSpan, attributes) => {
    let parent: Tracer.AnySpan | undefined
    if (parentSpan !== undefined) {
      // The common cases without an Option: an exported span or an inbound `traceparent`.
      if (parentSpan instanceof ExportedSpan && !parentSpan.dropped) parent = parentSpan
      else if (parentSpan._tag === "ExternalSpan") parent = parentSpan
      else parent = Option.getOrUndefined(effectiveParent(Option.some(parentSpan)))
    }
    parent ??= requestSpanOf(Fiber.getCurrent())
    const sampled =
      parent !== undefined ? parent.sampled : ratio >= 1 ? true : ratio <= 0 ? false : Math.random() < ratio
    const span = new ExportedSpan(name, parent, emptyContext, undefined, nowNanos(), kind, sampled, true, sink)
    if (attributes !== undefined && sampled) for (const key in attributes) span.attribute(key, attributes[key])
    return span
  }
  return {
    start,
    span(options) {
      let parent = effectiveParent(options.parent)
      // No parent in the context (a handler runs with its layer's build context): the request's.
      if (parent._tag === "None" && !options.root) parent = Option.fromUndefinedOr(requestSpanOf(Fiber.getCurrent()))
      const own =
        options.name.startsWith("oauth2.") || options.name.startsWith("svc.queue.") || options.name.startsWith("HTTP ")
      // Library spans (SQL statements, HTTP clients) are exported only inside a trace svc started:
      // background polling outside any request or task would be a stream of one-span traces.
      if (!isExportedName(options.name, options.kind) || (!own && parent._tag === "None")) {
        return new TransparentSpan(
          options.name,
          options.parent,
          options.annotations,
          options.kind,
          parent,
          options.startTime
        )
      }
      return new ExportedSpan(
        options.name,
        Option.getOrUndefined(parent),
        options.annotations,
        options.links,
        options.startTime,
        options.kind,
        decide(parent),
        own,
        sink
      )
    }
  }
}

const emptyContext: Context.Context<never> = Context.empty()

const httpSpanNames = new Map<string, string>()

/** `HTTP {method}`, the name of the spec's server and client spans (kept per method, up to 64 methods). */
export const httpSpanName = (method: string): string => {
  let name = httpSpanNames.get(method)
  if (name === undefined) {
    name = `HTTP ${method}`
    if (httpSpanNames.size < 64) httpSpanNames.set(method, name)
  }
  return name
}

/** `00-<trace>-<span>-<flags>` of `span` (W3C trace context). */
export const traceparentOf = (span: Tracer.AnySpan): string =>
  `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`

const traceparentPattern = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The parent described by an inbound `traceparent` header, if it is valid (W3C rules). */
export const parseTraceparent = (header: string | undefined): Tracer.ExternalSpan | undefined => {
  if (header === undefined) return undefined
  const match = traceparentPattern.exec(header.trim().toLowerCase())
  if (match === null) return undefined
  const [, traceId, spanId, flags] = match
  if (/^0+$/.test(traceId!) || /^0+$/.test(spanId!)) return undefined
  return Tracer.externalSpan({ traceId: traceId!, spanId: spanId!, sampled: (Number.parseInt(flags!, 16) & 1) === 1 })
}
