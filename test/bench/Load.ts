/**
 * A closed-loop HTTP/1.1 load generator: `connections` keep-alive connections (undici `Pool`),
 * one request in flight per connection, for a warm-up then a measured window. Bounded in time and
 * in request count; every non-2xx status and every transport error counts as an error.
 */
import { Pool } from "undici"

export interface LoadOptions {
  /** Full URL on loopback, e.g. `http://127.0.0.1:8080/ping`. */
  readonly url: string
  readonly connections: number
  readonly durationMs: number
  readonly warmupMs: number
  /** Safety bound on requests issued (warm-up included). */
  readonly maxRequests?: number
  readonly method?: "GET" | "POST"
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string
}

export interface LoadResult {
  readonly connections: number
  /** Requests started inside the measured window (warm-up excluded). */
  readonly requests: number
  readonly errors: number
  readonly durationMs: number
  readonly rps: number
  readonly meanMs: number
  readonly p50Ms: number
  readonly p90Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  /** Count per status code (`"error"` for transport errors), measured window only. */
  readonly statuses: Readonly<Record<string, number>>
}

const defaultMaxRequests = 5_000_000

/** Nearest-rank percentile of an ascending-sorted array; 0 when empty. */
export const percentile = (sorted: Float64Array, p: number): number => {
  if (sorted.length === 0) return 0
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] ?? 0
}

const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6

export const runLoad = async (options: LoadOptions): Promise<LoadResult> => {
  const url = new URL(options.url)
  const pool = new Pool(url.origin, {
    connections: options.connections,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: 10_000,
    bodyTimeout: 10_000
  })
  const maxRequests = options.maxRequests ?? defaultMaxRequests
  const path = url.pathname + url.search
  const start = nowMs()
  const measureFrom = start + options.warmupMs
  const stopAt = measureFrom + options.durationMs
  let issued = 0
  let lastEnd = measureFrom
  let latencies = new Float64Array(65_536)
  let measured = 0
  let errors = 0
  const statuses: Record<string, number> = {}

  const record = (t0: number, t1: number, status: string, ok: boolean) => {
    if (t0 < measureFrom) return
    if (measured === latencies.length) {
      const grown = new Float64Array(latencies.length * 2)
      grown.set(latencies)
      latencies = grown
    }
    latencies[measured++] = t1 - t0
    if (!ok) errors++
    statuses[status] = (statuses[status] ?? 0) + 1
    if (t1 > lastEnd) lastEnd = t1
  }

  const worker = async () => {
    while (issued < maxRequests) {
      const t0 = nowMs()
      if (t0 >= stopAt) return
      issued++
      try {
        const response = await pool.request({
          method: options.method ?? "GET",
          path,
          ...(options.headers === undefined ? {} : { headers: options.headers }),
          ...(options.body === undefined ? {} : { body: options.body })
        })
        await response.body.dump()
        const code = response.statusCode
        record(t0, nowMs(), String(code), code >= 200 && code < 300)
      } catch {
        record(t0, nowMs(), "error", false)
        // a refused or reset connection fails fast: back off so errors do not spin the loop
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    }
  }

  try {
    await Promise.all(Array.from({ length: options.connections }, worker))
  } finally {
    await pool.destroy()
  }

  const sorted = latencies.subarray(0, measured).sort()
  const durationMs = Math.max(lastEnd - measureFrom, 1)
  let sum = 0
  for (const value of sorted) sum += value
  return {
    connections: options.connections,
    requests: measured,
    errors,
    durationMs,
    rps: (measured / durationMs) * 1000,
    meanMs: measured === 0 ? 0 : sum / measured,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.length === 0 ? 0 : (sorted[sorted.length - 1] ?? 0),
    statuses
  }
}
