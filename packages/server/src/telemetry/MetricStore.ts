/**
 * The metrics of spec 8.3, kept in plain objects so recording from the data plane is a map
 * lookup and a few additions (no Effect, no allocation for a series already seen). One store
 * per process feeds both the OTLP exporter (cumulative or delta) and the Prometheus scrape
 * (always cumulative). Attribute values are strings, numbers or booleans; the label projection
 * and the value cap are applied before a value reaches here (`Labels.ts`).
 */
import type { OtlpMetrics } from "effect/observability"

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

export interface Series {
  readonly attributes: Attributes
  /** counter, updown and gauge value; histogram sum. */
  value: number
  count: number
  min: number
  max: number
  /** Per bucket (not cumulative), `boundaries.length + 1` entries; histograms only. */
  readonly buckets: Array<number>
}

/** The series of an attribute set; svc builds each instrument's attributes in one fixed key order. */
const seriesKey = (attributes: Attributes): string => {
  let key = ""
  for (const k in attributes) key += `${k}\u0000${attributes[k]}\u0001`
  return key
}

export class Instrument {
  readonly series = new Map<string, Series>()
  readonly info: InstrumentInfo
  readonly boundaries: ReadonlyArray<number>
  constructor(info: InstrumentInfo, boundaries: ReadonlyArray<number>) {
    this.info = info
    this.boundaries = boundaries
  }

  private at(attributes: Attributes): Series {
    const key = seriesKey(attributes)
    let series = this.series.get(key)
    if (series === undefined) {
      series = {
        attributes,
        value: 0,
        count: 0,
        min: Number.POSITIVE_INFINITY,
        max: Number.NEGATIVE_INFINITY,
        buckets: this.info.kind === "histogram" ? new Array<number>(this.boundaries.length + 1).fill(0) : []
      }
      this.series.set(key, series)
    }
    return series
  }

  /** counter (n ≥ 0) and updown (any n). */
  add(n: number, attributes: Attributes): void {
    this.at(attributes).value += n
  }

  /** gauge: the current value. */
  set(n: number, attributes: Attributes): void {
    this.at(attributes).value = n
  }

  /** histogram: one observation. */
  record(n: number, attributes: Attributes): void {
    const s = this.at(attributes)
    s.value += n
    s.count++
    if (n < s.min) s.min = n
    if (n > s.max) s.max = n
    const b = this.boundaries
    let i = 0
    while (i < b.length && n > b[i]!) i++
    s.buckets[i]!++
  }
}

/** Every instrument of this process, by name. */
export class MetricStore {
  readonly instruments = new Map<string, Instrument>()

  instrument(info: InstrumentInfo, boundaries: ReadonlyArray<number> = []): Instrument {
    const existing = this.instruments.get(info.name)
    if (existing !== undefined) return existing
    const created = new Instrument(info, boundaries)
    this.instruments.set(info.name, created)
    return created
  }
}

// ---------------------------------------------------------------------------------------------
// OTLP

const toKeyValues = (attributes: Attributes) =>
  Object.entries(attributes).map(([key, value]) => ({
    key,
    value:
      typeof value === "string"
        ? { stringValue: value }
        : typeof value === "boolean"
          ? { boolValue: value }
          : Number.isInteger(value)
            ? { intValue: value }
            : { doubleValue: value }
  }))

/** One metric of an OTLP export, and its points, as `OtlpSerialization.metrics` takes them. */
export type OtlpMetric = OtlpMetrics.MetricsData["resourceMetrics"][number]["scopeMetrics"][number]["metrics"][number]
type NumberPoint = NonNullable<OtlpMetric["gauge"]>["dataPoints"][number]
type HistogramPoint = NonNullable<OtlpMetric["histogram"]>["dataPoints"][number]
type Temporality = NonNullable<OtlpMetric["sum"]>["aggregationTemporality"]

const CUMULATIVE: Temporality = 2
const DELTA: Temporality = 1

interface Previous {
  value: number
  count: number
  buckets: ReadonlyArray<number>
}

/** The metrics of one export, and how to make them the baseline of the next (delta). */
export interface OtlpSnapshot {
  readonly metrics: Array<OtlpMetric>
  readonly commit: () => void
}

/**
 * Snapshots `store` as OTLP `ResourceMetrics` content; with `delta`, each export reports the change
 * since the previous successful one (`commit` makes a snapshot the new baseline).
 */
export const otlpSnapshotter = (
  store: MetricStore,
  temporality: "cumulative" | "delta",
  startNanos: bigint
): ((nowNanos: bigint) => OtlpSnapshot) => {
  let previous = new Map<string, Previous>()
  let previousNanos = startNanos
  return (nowNanos: bigint) => {
    const next = new Map<string, Previous>()
    const metrics: Array<OtlpMetric> = []
    const delta = temporality === "delta"
    const start = String(delta ? previousNanos : startNanos)
    const now = String(nowNanos)
    for (const instrument of store.instruments.values()) {
      const { info } = instrument
      const points: Array<NumberPoint> = []
      const histogramPoints: Array<HistogramPoint> = []
      for (const [key, s] of instrument.series) {
        const id = `${info.name}\u0002${key}`
        const before = previous.get(id)
        const attributes = toKeyValues(s.attributes)
        switch (info.kind) {
          case "counter": {
            next.set(id, { value: s.value, count: 0, buckets: [] })
            const value = delta && before !== undefined ? s.value - before.value : s.value
            points.push({ attributes, startTimeUnixNano: start, timeUnixNano: now, asDouble: value })
            break
          }
          case "updown":
          case "gauge":
            points.push({ attributes, startTimeUnixNano: String(startNanos), timeUnixNano: now, asDouble: s.value })
            break
          case "histogram": {
            next.set(id, { value: s.value, count: s.count, buckets: s.buckets.slice() })
            const useDelta = delta && before !== undefined
            histogramPoints.push({
              attributes,
              startTimeUnixNano: start,
              timeUnixNano: now,
              count: useDelta ? s.count - before.count : s.count,
              sum: useDelta ? s.value - before.value : s.value,
              ...(useDelta || s.count === 0 ? {} : { min: s.min, max: s.max }),
              bucketCounts: useDelta ? s.buckets.map((c, i) => c - (before.buckets[i] ?? 0)) : s.buckets.slice(),
              explicitBounds: instrument.boundaries.slice()
            })
            break
          }
        }
      }
      if (points.length === 0 && histogramPoints.length === 0) continue
      const base = { name: info.name, description: info.description, unit: info.unit }
      switch (info.kind) {
        case "counter":
          metrics.push({
            ...base,
            sum: { dataPoints: points, aggregationTemporality: delta ? DELTA : CUMULATIVE, isMonotonic: true }
          })
          break
        case "updown":
          // An up-down counter is a non-monotonic sum, always reported cumulatively.
          metrics.push({ ...base, sum: { dataPoints: points, aggregationTemporality: CUMULATIVE, isMonotonic: false } })
          break
        case "gauge":
          metrics.push({ ...base, gauge: { dataPoints: points } })
          break
        case "histogram":
          metrics.push({
            ...base,
            histogram: { dataPoints: histogramPoints, aggregationTemporality: delta ? DELTA : CUMULATIVE }
          })
          break
      }
    }
    const commit = () => {
      previous = next
      previousNanos = nowNanos
    }
    return { metrics, commit }
  }
}

// ---------------------------------------------------------------------------------------------
// Prometheus text exposition (version 0.0.4)

const promName = (name: string) => name.replace(/[^a-zA-Z0-9_:]/g, "_")

const unitSuffix: Record<string, string> = { s: "_seconds", By: "_bytes" }

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')

const labelsText = (attributes: Attributes, extra?: readonly [string, string]) => {
  const parts = Object.entries(attributes).map(([k, v]) => `${promName(k)}="${escapeLabel(String(v))}"`)
  if (extra !== undefined) parts.push(`${extra[0]}="${escapeLabel(extra[1])}"`)
  return parts.length === 0 ? "" : `{${parts.join(",")}}`
}

const numberText = (n: number) =>
  Number.isNaN(n)
    ? "NaN"
    : n === Number.POSITIVE_INFINITY
      ? "+Inf"
      : n === Number.NEGATIVE_INFINITY
        ? "-Inf"
        : String(n)

/** The whole store in the Prometheus text format; names follow the OpenTelemetry-to-Prometheus rules. */
export const prometheusText = (store: MetricStore): string => {
  const lines: Array<string> = []
  for (const instrument of store.instruments.values()) {
    const { info } = instrument
    if (instrument.series.size === 0) continue
    let name = promName(info.name)
    const suffix = unitSuffix[info.unit]
    if (suffix !== undefined && !name.endsWith(suffix)) name += suffix
    if (info.kind === "counter" && !name.endsWith("_total")) name += "_total"
    const type = info.kind === "counter" ? "counter" : info.kind === "histogram" ? "histogram" : "gauge"
    lines.push(`# HELP ${name} ${info.description}`)
    lines.push(`# TYPE ${name} ${type}`)
    for (const s of instrument.series.values()) {
      if (info.kind !== "histogram") {
        lines.push(`${name}${labelsText(s.attributes)} ${numberText(s.value)}`)
        continue
      }
      let cumulative = 0
      instrument.boundaries.forEach((bound, i) => {
        cumulative += s.buckets[i]!
        lines.push(`${name}_bucket${labelsText(s.attributes, ["le", numberText(bound)])} ${cumulative}`)
      })
      lines.push(`${name}_bucket${labelsText(s.attributes, ["le", "+Inf"])} ${s.count}`)
      lines.push(`${name}_sum${labelsText(s.attributes)} ${numberText(s.value)}`)
      lines.push(`${name}_count${labelsText(s.attributes)} ${s.count}`)
    }
  }
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`
}
