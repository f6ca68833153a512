/**
 * App-metrics schema 0004: per-minute rollups of request events (issue 19 item 4), maintained by
 * `RequestEventRepo.insertBatch` in the statement that inserts the events. One row per minute and
 * (namespace, type, method, response_status_code, response_source, connector_id), absent values
 * stored as 0 (status) or '' (source, connector) so the key has no NULLs: the count, the errors
 * (no answer or a status of 500 or more), the sum and the max of `duration_ms`, and a histogram of
 * `duration_ms` in 40 fixed buckets `h0` … `h39` (bounds in `RequestEventRepo.ts`,
 * `durationBucketBounds`: [0, 1 ms), then 10^(k/8) ms to 10^((k+1)/8) ms, then 10^4.75 ms ≈ 56 s
 * and more). The primary key leads with the minute: range scans of queries and retention use it.
 * The events already stored are rolled up here, in one statement (about 12 s per 5,000,000 events
 * on PostgreSQL); the statement is a frozen copy of `rollupUpsertSql` as of this migration.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const rollupBuckets = 40

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const buckets = Array.from({ length: rollupBuckets }, (_, i) => `h${i} integer NOT NULL DEFAULT 0`).join(",\n      ")
  yield* sql.unsafe(`
    CREATE TABLE request_event_rollups (
      minute timestamptz NOT NULL,
      namespace text NOT NULL,
      type text NOT NULL,
      method text NOT NULL,
      response_status_code integer NOT NULL,
      response_source text NOT NULL,
      connector_id text NOT NULL,
      count bigint NOT NULL,
      errors bigint NOT NULL,
      duration_sum double precision NOT NULL,
      duration_max double precision NOT NULL,
      ${buckets},
      PRIMARY KEY (minute, namespace, type, method, response_status_code, response_source, connector_id)
    )`)
  const columns = Array.from({ length: rollupBuckets }, (_, i) => `h${i}`)
  yield* sql.unsafe(`
    INSERT INTO request_event_rollups (minute, namespace, type, method, response_status_code, response_source,
      connector_id, count, errors, duration_sum, duration_max, ${columns.join(", ")})
    SELECT to_timestamp(floor(date_part('epoch', timestamp) / 60) * 60), namespace, type, method,
      coalesce(response_status_code, 0), coalesce(response_source, ''), coalesce(connector_id, ''),
      count(*), count(*) FILTER (WHERE response_status_code IS NULL OR response_status_code >= 500),
      sum(duration_ms), max(duration_ms),
      ${columns.map((_, k) => `count(*) FILTER (WHERE b = ${k})`).join(", ")}
    FROM (SELECT *, CASE WHEN duration_ms < 1 THEN 0
            ELSE least(${rollupBuckets - 1}, 1 + CAST(floor(8 * log(CAST(duration_ms AS float8))) AS integer)) END AS b
          FROM request_events) AS s
    GROUP BY 1, 2, 3, 4, 5, 6, 7`)
})
