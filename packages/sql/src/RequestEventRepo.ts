/**
 * Request events in the app-metrics database (spec 2.12, 4.7; ARCHITECTURE "Storage notes"):
 * append-only, idempotent batch inserts, and newest-first keyset pages filtered in SQL by every
 * list filter and by the caller's access filter. Columns and fields share their snake_case names,
 * so this repository works on the client without name transforms.
 */
import type { AccessFilter } from "@svc/domain/AccessFilter"
import { RequestEvent, type RequestEventFilter } from "@svc/domain/RequestEvent"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { bucketColumns, exactP95MaxEvents, histogramP95, rollupUpsertSql } from "./RequestEventRollupSql.ts"
import { accessWhere, escapeLike, namespaceWhere } from "./ResourceSql.ts"
import { selectorWhere } from "./SelectorSql.ts"

/** One page request: the filters, the rows the caller may list, and the keyset position. */
export interface RequestEventQuery extends RequestEventFilter {
  readonly access: AccessFilter
  /** The last event of the previous page (its ISO timestamp and id); newest first. */
  readonly after: { readonly timestamp: string; readonly id: string } | undefined
  readonly limit: number
}

/** Request-event columns a metric may group by (spec 4.7), each read as text. */
export const groupableColumns = ["type", "method", "response_status_code", "response_source", "connector_id"] as const
export type GroupableColumn = (typeof groupableColumns)[number]

/** One aggregation over request events in steps of `stepMs` from `startMs` (spec 4.7). */
export interface RequestEventAggregation {
  readonly access: AccessFilter
  readonly namespace: RequestEventFilter["namespace"]
  readonly selector: RequestEventFilter["selector"]
  readonly start: Date
  readonly end: Date
  readonly startMs: number
  readonly stepMs: number
  readonly groupBy: ReadonlyArray<GroupableColumn>
  /**
   * `count` of events, `avg` or `p95` of `duration_ms`. Without a selector, over whole minutes,
   * these read the per-minute rollups; p95 then comes from their histograms ({@link histogramP95})
   * unless the range holds at most {@link exactP95MaxEvents} events (then exact, `percentile_cont`).
   */
  readonly aggregation: "count" | "avg" | "p95"
  /** Only errors: no answer (unreachable, timed out) or a status of 500 or more. */
  readonly errorsOnly: boolean
}

/** One aggregated cell: the step index, the groupBy values (null when absent) and the value. */
export interface AggregatedCell {
  readonly step: number
  readonly groups: ReadonlyArray<string | null>
  readonly value: number
}

/** Rows per INSERT: bounds one statement's JSON text (about 1 MB at 2000 rows, the embedded default's batch). */
export const insertChunkSize = 2000

const StoredEvent = Schema.Struct({ ...RequestEvent.fields, timestamp: Schema.Date })
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(StoredEvent))

const present = (row: typeof StoredEvent.Type): RequestEvent => ({ ...row, timestamp: row.timestamp.toISOString() })

/** The columns of `request_events` (the keys of an event's JSON), in table order, as the batch INSERT lists them. */
export const requestEventColumns = [
  "id",
  "timestamp",
  "namespace",
  "type",
  "method",
  "host",
  "path",
  "response_status_code",
  "response_source",
  "connector_id",
  "connector_version",
  "connection_id",
  "actor_id",
  "duration_ms",
  "labels",
  "rate_limit_id",
  "rate_limit_mode",
  "rate_limit_bucket",
  "rate_limit_matched",
  "full_request_recorded"
]
const storedColumns = requestEventColumns.join(", ")
/** What the INSERT selects from the JSON rows: the timestamp at millisecond precision, as cursors carry it. */
const selectedColumns = requestEventColumns
  .map((column) => (column === "timestamp" ? "date_trunc('milliseconds', timestamp)" : column))
  .join(", ")

/**
 * What the INSERT hands the rollup upsert: the columns the rollups read, not `*` (the CTE's rows
 * are materialised, and labels and the rate-limit JSON were copied there for nothing).
 */
const rollupSourceColumns =
  "timestamp, namespace, type, method, response_status_code, response_source, connector_id, duration_ms"

/** Storage of request events. Decoding failures of stored rows are defects. */
export class RequestEventRepo extends Context.Service<
  RequestEventRepo,
  {
    /**
     * Stores `events`, one INSERT of a JSON array per {@link insertChunkSize}; ids already stored are
     * skipped, so a batch may be written again after a failure. Returns how many rows were new.
     * The same statement adds the new rows to the per-minute rollups (`request_event_rollups`),
     * so rollups and events never disagree.
     */
    readonly insertBatch: (events: ReadonlyArray<RequestEvent>) => Effect.Effect<number, SqlError>
    /**
     * {@link insertBatch} of events given as their JSON texts (`JSON.stringify` of a
     * `RequestEvent` each, as the event buffer's journal already holds them).
     */
    readonly insertJson: (lines: ReadonlyArray<string>) => Effect.Effect<number, SqlError>
    /** One page, newest first (timestamp DESC, id DESC); `more` when another page follows. */
    readonly list: (
      query: RequestEventQuery
    ) => Effect.Effect<{ readonly rows: ReadonlyArray<RequestEvent>; readonly more: boolean }, SqlError>
    readonly get: (id: string) => Effect.Effect<Option.Option<RequestEvent>, SqlError>
    /** Aggregated cells of one metric query; empty steps have no cell. */
    readonly aggregate: (query: RequestEventAggregation) => Effect.Effect<ReadonlyArray<AggregatedCell>, SqlError>
    /** Succeeds when the database answers (tells an outage from a rejected row). */
    readonly ping: Effect.Effect<void, SqlError>
  }
>()("@svc/sql/RequestEventRepo") {
  /** The repository over the current `SqlClient` (the app-metrics client, spec 8.2). */
  static readonly make: Effect.Effect<RequestEventRepo["Service"], never, SqlClient.SqlClient> = Effect.suspend(() =>
    RequestEventRepo.makeWith({ exactP95MaxEvents })
  )

  /**
   * {@link make} with its thresholds: a p95 over at most `exactP95MaxEvents` events is exact;
   * `rawOnly` aggregates raw rows always (the bench compares both).
   */
  static readonly makeWith = (options: {
    readonly exactP95MaxEvents: number
    readonly rawOnly?: boolean
  }): Effect.Effect<RequestEventRepo["Service"], never, SqlClient.SqlClient> =>
    Effect.gen(function* () {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()

      const insertJson = Effect.fn("RequestEventRepo.insertBatch")(function* (lines: ReadonlyArray<string>) {
        let inserted = 0
        for (let from = 0; from < lines.length; from += insertChunkSize) {
          // One JSON parameter for the whole chunk: binding 20 parameters per row cost the client
          // twice the CPU per event, and PGlite's thread a third more (docs/performance.md).
          const rows = `[${lines.slice(from, from + insertChunkSize).join(",")}]`
          const result = yield* sql<{ readonly inserted: number | string }>`
            WITH ins AS (INSERT INTO request_events (${sql.literal(storedColumns)})
              SELECT ${sql.literal(selectedColumns)}
              FROM json_populate_recordset(NULL::request_events, ${rows}::json)
              ON CONFLICT (id) DO NOTHING RETURNING ${sql.literal(rollupSourceColumns)}),
            rollup AS (${sql.literal(rollupUpsertSql("ins"))})
            SELECT count(*) AS inserted FROM ins`
          inserted += Number(result[0]?.inserted ?? 0)
        }
        return inserted
      })
      const insertBatch = (events: ReadonlyArray<RequestEvent>) =>
        insertJson(events.map((event) => JSON.stringify(event)))

      const filterWhere = (query: RequestEventQuery): Array<Statement.Fragment> => {
        const where = [accessWhere(sql, query.access)]
        if (query.namespace !== undefined) where.push(namespaceWhere(sql, query.namespace))
        if (query.connectorId !== undefined) where.push(sql`connector_id = ${query.connectorId}`)
        if (query.connectionId !== undefined) where.push(sql`connection_id = ${query.connectionId}`)
        if (query.method !== undefined) where.push(sql`upper(method) = ${query.method}`)
        if (query.statusCodes !== undefined) {
          where.push(sql`response_status_code BETWEEN ${query.statusCodes.min} AND ${query.statusCodes.max}`)
        }
        if (query.path !== undefined) {
          where.push(
            query.path.prefix ? sql`path LIKE ${`${escapeLike(query.path.value)}%`}` : sql`path = ${query.path.value}`
          )
        }
        if (query.responseSource !== undefined) where.push(sql`response_source = ${query.responseSource}`)
        if (query.rateLimitId !== undefined) where.push(sql`rate_limit_id = ${query.rateLimitId}`)
        if (query.selector !== undefined) where.push(selectorWhere(sql, query.selector, "labels"))
        if (query.start !== undefined) where.push(sql`timestamp >= ${query.start}`)
        if (query.end !== undefined) where.push(sql`timestamp < ${query.end}`)
        if (query.after !== undefined) {
          where.push(sql`(timestamp, id) < (CAST(${query.after.timestamp} AS timestamptz), ${query.after.id})`)
        }
        return where
      }

      const list = Effect.fn("RequestEventRepo.list")(function* (query: RequestEventQuery) {
        const rows = yield* sql`SELECT * FROM request_events WHERE ${sql.and(filterWhere(query))}
          ORDER BY timestamp DESC, id DESC LIMIT ${query.limit + 1}`
        const decoded = yield* Effect.orDie(decodeRows(rows.slice(0, query.limit)))
        return { rows: decoded.map(present), more: rows.length > query.limit }
      })

      const get = Effect.fn("RequestEventRepo.get")(function* (id: string) {
        const rows = yield* sql`SELECT * FROM request_events WHERE id = ${id}`
        const decoded = yield* Effect.orDie(decodeRows(rows))
        return Option.map(Option.fromNullishOr(decoded[0]), present)
      })

      const groupColumn = (column: GroupableColumn) => {
        switch (column) {
          case "response_status_code":
            return sql`CAST(response_status_code AS text)`
          default:
            return sql(column)
        }
      }

      const aggregateRaw = Effect.fn("RequestEventRepo.aggregateRaw")(function* (query: RequestEventAggregation) {
        const where = [accessWhere(sql, query.access), sql`timestamp >= ${query.start}`, sql`timestamp < ${query.end}`]
        if (query.namespace !== undefined) where.push(namespaceWhere(sql, query.namespace))
        if (query.selector !== undefined) where.push(selectorWhere(sql, query.selector, "labels"))
        if (query.errorsOnly) where.push(sql`(response_status_code IS NULL OR response_status_code >= 500)`)
        const value =
          query.aggregation === "count"
            ? sql`CAST(count(*) AS float8)`
            : query.aggregation === "avg"
              ? sql`CAST(avg(duration_ms) AS float8)`
              : sql`CAST(percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms) AS float8)`
        const groups = query.groupBy.map((column, i) => sql`${groupColumn(column)} AS ${sql(`g${i}`)}`)
        // date_part answers a float: 2.5x cheaper per row than extract's numeric (measured on 5M rows).
        const step = sql`CAST(floor((date_part('epoch', timestamp) * 1000 - ${query.startMs}) / ${query.stepMs}) AS integer)`
        const rows = yield* sql<Record<string, unknown>>`
          SELECT ${step} AS step, ${sql.csv([...groups, sql`${value} AS value`])}
          FROM request_events WHERE ${sql.and(where)}
          GROUP BY ${sql.literal(["1", ...query.groupBy.map((_, i) => String(i + 2))].join(", "))}`
        return rows.map(
          (row): AggregatedCell => ({
            step: Number(row.step),
            groups: query.groupBy.map((_, i) => {
              const group = row[`g${i}`]
              return group === null || group === undefined ? null : String(group)
            }),
            value: Number(row.value)
          })
        )
      })

      const rollupGroupColumn = (column: GroupableColumn) => {
        switch (column) {
          case "response_status_code":
            return sql`CAST(NULLIF(response_status_code, 0) AS text)`
          case "response_source":
          case "connector_id":
            return sql`NULLIF(${sql(column)}, '')`
          default:
            return sql(column)
        }
      }

      const rollupWhere = (query: RequestEventAggregation) => {
        const where = [accessWhere(sql, query.access), sql`minute >= ${query.start}`, sql`minute < ${query.end}`]
        if (query.namespace !== undefined) where.push(namespaceWhere(sql, query.namespace))
        return where
      }

      /** The aggregation over the per-minute rollups (whole minutes, no selector, no id grants). */
      const aggregateRollups = Effect.fn("RequestEventRepo.aggregateRollups")(function* (
        query: RequestEventAggregation
      ) {
        const where = rollupWhere(query)
        const groups = query.groupBy.map((column, i) => sql`${rollupGroupColumn(column)} AS ${sql(`g${i}`)}`)
        const values =
          query.aggregation === "count"
            ? [sql`CAST(sum(${sql(query.errorsOnly ? "errors" : "count")}) AS float8) AS value`]
            : query.aggregation === "avg"
              ? [sql`sum(duration_sum) / CAST(sum(count) AS float8) AS value`]
              : [
                  sql`max(duration_max) AS max`,
                  ...bucketColumns.map((h) => sql`CAST(sum(${sql(h)}) AS float8) AS ${sql(h)}`)
                ]
        const step = sql`CAST(floor((date_part('epoch', minute) * 1000 - ${query.startMs}) / ${query.stepMs}) AS integer)`
        const rows = yield* sql<Record<string, unknown>>`
          SELECT ${step} AS step, ${sql.csv([...groups, ...values])}
          FROM request_event_rollups WHERE ${sql.and(where)}
          GROUP BY ${sql.literal(["1", ...query.groupBy.map((_, i) => String(i + 2))].join(", "))}
          ${query.errorsOnly ? sql`HAVING sum(errors) > 0` : sql``}`
        let events = 0
        const cells = rows.flatMap((row): Array<AggregatedCell> => {
          let value: number | undefined
          if (query.aggregation === "p95") {
            const counts = bucketColumns.map((h) => Number(row[h]))
            for (const n of counts) events += n
            value = histogramP95(counts, Number(row.max))
          } else {
            value = Number(row.value)
          }
          if (value === undefined) return []
          return [
            {
              step: Number(row.step),
              groups: query.groupBy.map((_, i) => {
                const group = row[`g${i}`]
                return group === null || group === undefined ? null : String(group)
              }),
              value
            }
          ]
        })
        return { cells, events }
      })

      const minuteMs = 60_000
      const noIds = (clauses: AccessFilter["grants"] | undefined) =>
        clauses === undefined || clauses.every((clause) => clause.ids === undefined)

      const aggregate = Effect.fn("RequestEventRepo.aggregate")(function* (query: RequestEventAggregation) {
        const rollups =
          options.rawOnly !== true &&
          query.selector === undefined &&
          query.stepMs % minuteMs === 0 &&
          query.startMs % minuteMs === 0 &&
          query.start.getTime() % minuteMs === 0 &&
          query.end.getTime() % minuteMs === 0 &&
          !(query.errorsOnly && query.aggregation !== "count") &&
          noIds(query.access.grants) &&
          noIds(query.access.restrictions)
        if (!rollups) return yield* aggregateRaw(query)
        const { cells, events } = yield* aggregateRollups(query)
        // A p95 is exact from the raw rows while that is cheap: few events in the whole range.
        if (query.aggregation === "p95" && events <= options.exactP95MaxEvents) return yield* aggregateRaw(query)
        return cells
      })

      const ping = Effect.asVoid(sql`SELECT 1`)

      return RequestEventRepo.of({ insertBatch, insertJson, list, get, aggregate, ping })
    })

  /**
   * Requires the `SqlClient` of the app-metrics database with its schema migrated; the server
   * provides its `AppMetricsSql` client as `SqlClient` to this layer only.
   */
  static readonly layer: Layer.Layer<RequestEventRepo, never, SqlClient.SqlClient> = Layer.effect(
    RequestEventRepo,
    RequestEventRepo.make
  )
}
