import type { AttributeValue } from "./Metrics.ts"

/** One layer of labels (connector, connection or request), absent when it has none. */
export type Labels = Readonly<Record<string, string>> | undefined

/**
 * Label projection (spec 8.3): the effective set is connector, then connection, then request
 * labels (the last wins); only allowlisted keys survive; a metric value past the per-key cap of
 * distinct values becomes `other` (per process).
 */
export class LabelProjection {
  private readonly seen = new Map<string, Set<string>>()
  readonly spanKeys: ReadonlyArray<string>
  readonly metricKeys: ReadonlyArray<string>
  readonly cap: number | undefined
  constructor(spanKeys: ReadonlyArray<string>, metricKeys: ReadonlyArray<string>, cap: number | undefined) {
    this.spanKeys = spanKeys
    this.metricKeys = metricKeys
    this.cap = cap
  }

  private static pick(key: string, layers: ReadonlyArray<Labels>): string | undefined {
    for (let i = layers.length - 1; i >= 0; i--) {
      const value = layers[i]?.[key]
      if (value !== undefined) return value
    }
    return undefined
  }

  /** Span attributes `svc.label.<key>` for every allowlisted key present. */
  spanAttributes(layers: ReadonlyArray<Labels>, into: Record<string, AttributeValue>): void {
    for (const key of this.spanKeys) {
      const value = LabelProjection.pick(key, layers)
      if (value !== undefined) into[`svc.label.${key}`] = value
    }
  }

  /** Metric attributes `svc.label.<key>`, capped. */
  metricAttributes(layers: ReadonlyArray<Labels>, into: Record<string, AttributeValue>): void {
    for (const key of this.metricKeys) {
      const value = LabelProjection.pick(key, layers)
      if (value !== undefined) into[`svc.label.${key}`] = this.capped(key, value)
    }
  }

  capped(key: string, value: string): string {
    if (this.cap === undefined) return value
    let values = this.seen.get(key)
    if (values === undefined) {
      values = new Set()
      this.seen.set(key, values)
    }
    if (values.has(value)) return value
    if (values.size >= this.cap) return "other"
    values.add(value)
    return value
  }
}
