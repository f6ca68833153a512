/**
 * The per-minute rollups of request events (migration 0004): the duration histogram's buckets,
 * the p95 read from summed histograms, and the upsert that adds a batch of events to the rollups.
 */
/**
 * Buckets of the per-minute duration histograms (migration 0004, `h0` … `h39`): bucket 0 holds
 * [0, 1 ms), bucket k (1 … 38) holds [10^((k-1)/8) ms, 10^(k/8) ms) — each 33.4% wider than its
 * lower bound — and bucket 39 holds 10^(38/8) ms ≈ 56.2 s and more.
 */
export const durationBuckets = 40

/** The lower bound (ms) of histogram bucket `k`. */
export const bucketLowerMs = (k: number): number => (k === 0 ? 0 : 10 ** ((k - 1) / 8))
/** The upper bound (ms) of histogram bucket `k`; the last is unbounded. */
export const bucketUpperMs = (k: number): number =>
  k >= durationBuckets - 1 ? Number.POSITIVE_INFINITY : 10 ** (k / 8)

/**
 * A p95 query whose whole range holds more than this many events (as the rollups count them)
 * reads the summed histograms of the rollups; at most this many, it is exact from the raw rows
 * (`percentile_cont`), which then takes a few milliseconds.
 */
export const exactP95MaxEvents = 50_000

/**
 * The p95 of a histogram (counts per bucket, {@link durationBuckets} of them) with `max` the
 * largest duration: the rank of `percentile_cont(0.95)`, found in its bucket and interpolated
 * linearly inside it (the bucket's upper bound capped at `max`). The result lies in the same bucket
 * as the exact value for all but the straddling rank, so its error is below the bucket's width: at
 * most 33.4% of the exact value (1 ms below 1 ms, and up to `max` in the last bucket from 56.2 s).
 */
export const histogramP95 = (counts: ReadonlyArray<number>, max: number): number | undefined => {
  const total = counts.reduce((x, y) => x + y, 0)
  if (total === 0) return undefined
  const rank = 0.95 * (total - 1)
  let before = 0
  for (let k = 0; k < counts.length; k++) {
    const n = counts[k] ?? 0
    if (n > 0 && rank < before + n) {
      const lo = Math.min(bucketLowerMs(k), max)
      const hi = Math.min(bucketUpperMs(k), max)
      return lo + ((hi - lo) * (rank - before + 0.5)) / n
    }
    before += n
  }
  return max
}

export const bucketColumns = Array.from({ length: durationBuckets }, (_, k) => `h${k}`)
const rollupKey = "minute, namespace, type, method, response_status_code, response_source, connector_id"

/**
 * `INSERT … SELECT` of the rollup rows of the request events in `source` (a table or a CTE with
 * the request-event columns), added to the rows already stored for the same minute and key.
 * Exported for the bench, which seeds events directly and rolls them up with this statement.
 */
export const rollupUpsertSql = (source: string): string => `
  INSERT INTO request_event_rollups (${rollupKey}, count, errors, duration_sum, duration_max, ${bucketColumns.join(", ")})
  SELECT minute, namespace, type, method, status, source, connector, sum(n), sum(e), sum(s), max(m),
    ${bucketColumns.map((_, k) => `coalesce(sum(n) FILTER (WHERE b = ${k}), 0)`).join(", ")}
  FROM (
    -- per key and duration bucket first: the bucket columns are then filled per group, not per event
    SELECT to_timestamp(floor(date_part('epoch', timestamp) / 60) * 60) AS minute, namespace, type, method,
      coalesce(response_status_code, 0) AS status, coalesce(response_source, '') AS source,
      coalesce(connector_id, '') AS connector,
      CASE WHEN duration_ms < 1 THEN 0
        ELSE least(${durationBuckets - 1}, 1 + CAST(floor(8 * log(CAST(duration_ms AS float8))) AS integer)) END AS b,
      count(*) AS n, count(*) FILTER (WHERE response_status_code IS NULL OR response_status_code >= 500) AS e,
      sum(duration_ms) AS s, max(duration_ms) AS m
    FROM ${source}
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8) AS g
  GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 2, 3, 4, 5, 6, 7
  ON CONFLICT (${rollupKey}) DO UPDATE SET
    count = request_event_rollups.count + EXCLUDED.count,
    errors = request_event_rollups.errors + EXCLUDED.errors,
    duration_sum = request_event_rollups.duration_sum + EXCLUDED.duration_sum,
    duration_max = greatest(request_event_rollups.duration_max, EXCLUDED.duration_max),
    ${bucketColumns.map((h) => `${h} = request_event_rollups.${h} + EXCLUDED.${h}`).join(", ")}`
