/**
 * The metrics of spec 8.3 on effect's `Metric` registry — the one registry of the process, which
 * effect's `OtlpMetrics` exports over OTLP and effect's `PrometheusMetrics` formats for the
 * `/metrics` listener. The Effect counters of other modules (rate limits, request events) and
 * the plain-code instruments of this folder land in the same registry.
 *
 * The data plane records from plain code: an `Instrument` keeps, per attribute set, one Effect
 * `Metric` carrying those attributes and updates it with `updateUnsafe` against a fixed context
 * (a map lookup for the handle, one for the series in the registry; no Effect, no allocation for
 * a series already seen). The label projection and its value cap (`other`) are applied before a
 * value reaches here (`LabelProjection.ts`), which is why no adapter is needed on either export.
 *
 * Attribute values are strings in effect's registry (numbers such as a status code are written
 * as their decimal text). An instrument whose unit is not `1` carries effect's `unit` attribute:
 * `OtlpMetrics` reads the OTLP unit from it and `PrometheusMetrics` leaves it out of the labels.
 */
import { Context, Metric } from "effect"

export type AttributeValue = string | number | boolean
export type Attributes = Readonly<Record<string, AttributeValue>>

export type InstrumentKind = "counter" | "updown" | "histogram" | "gauge"

export interface InstrumentInfo {
  readonly name: string
  readonly description: string
  /** UCUM unit: `s`, `By`, `1`, `{request}`. */
  readonly unit: string
  readonly kind: InstrumentKind
}

/** Histogram boundaries of durations in seconds (OpenTelemetry's HTTP semantic conventions). */
export const durationBoundaries: ReadonlyArray<number> = [
  0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10
]

/** Histogram boundaries of task durations in seconds (tasks run for seconds to an hour). */
export const taskDurationBoundaries: ReadonlyArray<number> = [
  0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600
]

/** Histogram boundaries of body sizes in bytes. */
export const sizeBoundaries: ReadonlyArray<number> = [
  0, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000
]

// ---------------------------------------------------------------------------------------------
// Prometheus names

const unitSuffix: Record<string, string> = { s: "_seconds", By: "_bytes" }

/** Prometheus names of the metrics svc defines, by metric id (OpenTelemetry-to-Prometheus rules). */
const prometheusNames = new Map<string, string>()

const prometheusNameOf = (name: string, kind: InstrumentKind, unit: string): string => {
  let out = name.replace(/[^a-zA-Z0-9_:]/g, "_")
  const suffix = unitSuffix[unit]
  if (suffix !== undefined && !out.endsWith(suffix)) out += suffix
  if (kind === "counter" && !out.endsWith("_total")) out += "_total"
  return out
}

const define = (info: InstrumentInfo): void => {
  prometheusNames.set(info.name, prometheusNameOf(info.name, info.kind, info.unit))
}

/**
 * The Prometheus name of a metric id: svc's own metrics get the unit suffix and `_total` of the
 * OpenTelemetry conventions; any other id (effect's cluster gauges) is left to effect's sanitizer.
 */
export const prometheusName = (id: string): string => prometheusNames.get(id) ?? id

/** The ids of every metric svc has defined in this process so far (instruments and Effect counters). */
export const definedMetrics = (): ReadonlyArray<string> => [...prometheusNames.keys()]

/**
 * An incremental Effect counter of svc, for Effect code (`Metric.update(counter, 1)`), recorded
 * in the same registry as everything else and exported under `<name>_total` on Prometheus.
 */
export const counter = (name: string, description: string): Metric.Counter<number> => {
  define({ name, description, unit: "1", kind: "counter" })
  return Metric.counter(name, { description, incremental: true })
}

// ---------------------------------------------------------------------------------------------
// Plain-code instruments

/** The series of an attribute set; svc builds each instrument's attributes in one fixed key order. */
const seriesKey = (attributes: Attributes): string => {
  let key = ""
  for (const k in attributes) key += `${k}\u0000${attributes[k]}\u0001`
  return key
}

type Handle = Metric.Metric<number, unknown>

/** One series of an instrument, resolved once (`Instrument.bind`). */
export interface BoundInstrument {
  /** As `Instrument.add`. */
  readonly add: (n: number) => void
  /** As `Instrument.record` and `Instrument.set`. */
  readonly record: (n: number) => void
}

/**
 * The hooks of `handle`'s series in the registry of `context`, resolved (and the series
 * registered) now. effect's `updateUnsafe` finds them on every update (the metric's key, two
 * context lookups, a registry lookup); a bound series keeps them, which holds because a series,
 * once registered, is never removed from the registry (svc removes none). Undefined when the
 * metric does not expose `hook` (then the bound series updates through `updateUnsafe`).
 */
const hooksOf = (handle: Handle, context: Context.Context<never>): Metric.Metric.Hooks<number, unknown> | undefined => {
  const hook = (handle as { readonly hook?: unknown }).hook
  return typeof hook === "function" ? (hook.call(handle, context) as Metric.Metric.Hooks<number, unknown>) : undefined
}

/** A node of `Instrument.at`'s walk: attribute key → value → node, and the handle of the set ending here. */
type PathNode = Map<unknown, unknown>
const handleSlot = Symbol("handle")

export class Instrument {
  private readonly handles = new Map<string, Handle>()
  private readonly paths: PathNode = new Map()
  readonly info: InstrumentInfo
  readonly boundaries: ReadonlyArray<number>
  private readonly context: Context.Context<never>
  constructor(info: InstrumentInfo, boundaries: ReadonlyArray<number>, context: Context.Context<never>) {
    this.info = info
    this.boundaries = boundaries
    this.context = context
    define(info)
  }

  private create(attributes: Attributes): Handle {
    const { info } = this
    const record: Record<string, string> = {}
    for (const k in attributes) record[k] = String(attributes[k])
    if (info.unit !== "1") record.unit = info.unit
    const options = { description: info.description, attributes: record }
    switch (info.kind) {
      case "counter":
        return Metric.counter(info.name, { ...options, incremental: true })
      case "updown":
      case "gauge":
        return Metric.gauge(info.name, options)
      case "histogram":
        return Metric.histogram(info.name, { ...options, boundaries: this.boundaries })
    }
  }

  private at(attributes: Attributes): Handle {
    // The hot path: a walk of maps by attribute key then value (no string built, nothing allocated
    // for a series already seen). The series key below stays the identity of a series, so a value
    // written as a number once and as its text another time is still one series.
    let node = this.paths
    for (const k in attributes) {
      let byValue = node.get(k) as PathNode | undefined
      if (byValue === undefined) {
        byValue = new Map()
        node.set(k, byValue)
      }
      const value = attributes[k]
      let next = byValue.get(value) as PathNode | undefined
      if (next === undefined) {
        next = new Map()
        byValue.set(value, next)
      }
      node = next
    }
    const known = node.get(handleSlot) as Handle | undefined
    if (known !== undefined) return known
    const key = seriesKey(attributes)
    let handle = this.handles.get(key)
    if (handle === undefined) {
      handle = this.create(attributes)
      this.handles.set(key, handle)
    }
    node.set(handleSlot, handle)
    return handle
  }

  /** counter (n ≥ 0) and updown (any n; an up-down counter is a gauge moved by `n`). */
  add(n: number, attributes: Attributes): void {
    const handle = this.at(attributes)
    if (this.info.kind === "updown") handle.modifyUnsafe(n, this.context)
    else handle.updateUnsafe(n, this.context)
  }

  /**
   * The series of `attributes`, resolved now: for an attribute set the caller keeps and reuses
   * (its updates then skip building the series key and the lookup).
   */
  bind(attributes: Attributes): BoundInstrument {
    const handle = this.at(attributes)
    const context = this.context
    const updown = this.info.kind === "updown"
    const hooks = hooksOf(handle, context)
    if (hooks === undefined) {
      return {
        add: updown ? (n) => handle.modifyUnsafe(n, context) : (n) => handle.updateUnsafe(n, context),
        record: (n) => handle.updateUnsafe(n, context)
      }
    }
    return {
      add: updown ? (n) => hooks.modify(n, context) : (n) => hooks.update(n, context),
      record: (n) => hooks.update(n, context)
    }
  }

  /** gauge: the current value. */
  set(n: number, attributes: Attributes): void {
    this.at(attributes).updateUnsafe(n, this.context)
  }

  /** histogram: one observation. */
  record(n: number, attributes: Attributes): void {
    this.at(attributes).updateUnsafe(n, this.context)
  }
}

/**
 * Values resolved once per combination of three keys (nested maps: no key string, no attribute
 * object per lookup), e.g. the bound series of a request's method, status and route. Past `cap`
 * combinations nothing more is kept (`get` then stays undefined for a new one and the caller
 * resolves it each time), so caller-chosen values cannot grow it without bound.
 */
export class TupleCache<T> {
  private readonly root = new Map<unknown, Map<unknown, Map<unknown, T>>>()
  private size = 0
  private readonly cap: number
  constructor(cap = 4096) {
    this.cap = cap
  }

  get(a: unknown, b: unknown, c: unknown): T | undefined {
    return this.root.get(a)?.get(b)?.get(c)
  }

  /** Keeps `value` for the keys (unless full); answers `value`. */
  set(a: unknown, b: unknown, c: unknown, value: T): T {
    if (this.size >= this.cap) return value
    let byB = this.root.get(a)
    if (byB === undefined) {
      byB = new Map()
      this.root.set(a, byB)
    }
    let byC = byB.get(b)
    if (byC === undefined) {
      byC = new Map()
      byB.set(b, byC)
    }
    if (!byC.has(c)) this.size++
    byC.set(c, value)
    return value
  }
}

/**
 * The instruments of this process over effect's metric registry `registry` (the process's
 * `Metric.MetricRegistry`, shared with every Effect counter).
 */
export class Meter {
  readonly instruments = new Map<string, Instrument>()
  /** A context holding only the registry: what `updateUnsafe`, the snapshot and both exports read. */
  readonly context: Context.Context<never>
  readonly registry: Metric.MetricRegistry
  constructor(registry: Metric.MetricRegistry = new Map()) {
    this.registry = registry
    this.context = Context.make(Metric.MetricRegistry, registry)
  }

  instrument(info: InstrumentInfo, boundaries: ReadonlyArray<number> = []): Instrument {
    const existing = this.instruments.get(info.name)
    if (existing !== undefined) return existing
    const created = new Instrument(info, boundaries, this.context)
    this.instruments.set(info.name, created)
    return created
  }

  /**
   * The series of metric `name` now: attributes (without effect's `unit`) and value (a counter's
   * count, a gauge's value, a histogram's sum, with `count` its observations).
   */
  series(
    name: string
  ): Array<{ readonly attributes: Record<string, string>; readonly value: number; readonly count: number }> {
    const out: Array<{ attributes: Record<string, string>; value: number; count: number }> = []
    for (const s of this.snapshot()) {
      if (s.id !== name) continue
      const { unit: _unit, ...attributes } = s.attributes ?? {}
      switch (s.type) {
        case "Counter":
          out.push({ attributes, value: Number(s.state.count), count: 0 })
          break
        case "Gauge":
          out.push({ attributes, value: Number(s.state.value), count: 0 })
          break
        case "Histogram":
          out.push({ attributes, value: s.state.sum, count: s.state.count })
          break
        default:
          break
      }
    }
    return out
  }

  /** Every series of the registry (effect's snapshot). */
  snapshot(): ReadonlyArray<Metric.Metric.Snapshot> {
    return Metric.snapshotUnsafe(this.context)
  }
}
