/**
 * A sequential request series: one keep-alive connection (undici `Pool` of one), one request at a
 * time, a count of warm-up requests (not recorded) then a count of measured ones. Every non-2xx
 * status and every transport error counts as an error. Bounded in request count and per request.
 */
import { Pool } from "undici"
import { percentile } from "./Load.ts"

/** One series: `warmup` then `requests` GETs of `origin` + `path`, one after the other. */
export interface SequenceOptions {
  readonly origin: string
  /** Path and query, e.g. `/api/v1/connections?labelSelector=tier%3Dgold&limit=100`. */
  readonly path: string
  readonly warmup: number
  readonly requests: number
  readonly headers?: Readonly<Record<string, string>>
}

/** The measured part of a series (warm-up excluded). */
export interface SequenceResult {
  readonly requests: number
  readonly errors: number
  /** First measured request start to last measured response end. */
  readonly durationMs: number
  readonly rps: number
  readonly meanMs: number
  readonly p50Ms: number
  readonly p95Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  /** Count per status code (`"error"` for transport errors). */
  readonly statuses: Readonly<Record<string, number>>
  /** `items.length` of the last 2xx list page (`undefined` when the body had no `items`). */
  readonly items?: number
  /** Whether that page carried a `cursor` (more rows match than the page holds). */
  readonly more?: boolean
}

const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6

const pageShape = (text: string): { items?: number; more?: boolean } => {
  try {
    const body: unknown = JSON.parse(text)
    if (typeof body !== "object" || body === null || !("items" in body) || !Array.isArray(body.items)) return {}
    return { items: body.items.length, more: "cursor" in body && typeof body.cursor === "string" }
  } catch {
    return {}
  }
}

/** Runs the series; never throws for HTTP failures (they are counted as errors). */
export const runSequence = async (options: SequenceOptions): Promise<SequenceResult> => {
  const pool = new Pool(options.origin, {
    connections: 1,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: 10_000,
    bodyTimeout: 10_000
  })
  const latencies = new Float64Array(options.requests)
  const statuses: Record<string, number> = {}
  let errors = 0
  let lastBody = ""
  let first = 0
  let last = 0
  try {
    for (let i = 0; i < options.warmup + options.requests; i++) {
      const measured = i >= options.warmup
      const t0 = nowMs()
      let status = "error"
      let text = ""
      try {
        const response = await pool.request({
          method: "GET",
          path: options.path,
          ...(options.headers === undefined ? {} : { headers: options.headers })
        })
        text = await response.body.text()
        status = String(response.statusCode)
      } catch {
        // counted below as a transport error
      }
      const t1 = nowMs()
      const ok = status.startsWith("2") && status.length === 3
      if (ok) lastBody = text
      if (!measured) continue
      if (i === options.warmup) first = t0
      last = t1
      latencies[i - options.warmup] = t1 - t0
      statuses[status] = (statuses[status] ?? 0) + 1
      if (!ok) errors++
    }
  } finally {
    await pool.destroy()
  }
  const sorted = latencies.sort()
  const durationMs = Math.max(last - first, 1)
  let sum = 0
  for (const value of sorted) sum += value
  const count = sorted.length
  return {
    requests: count,
    errors,
    durationMs,
    rps: (count / durationMs) * 1000,
    meanMs: count === 0 ? 0 : sum / count,
    p50Ms: percentile(sorted, 50),
    p95Ms: percentile(sorted, 95),
    p99Ms: percentile(sorted, 99),
    maxMs: count === 0 ? 0 : (sorted[count - 1] ?? 0),
    statuses,
    ...pageShape(lastBody)
  }
}
