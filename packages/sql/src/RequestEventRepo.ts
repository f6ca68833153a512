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
import { jsonb } from "./ResourceRepo.ts"
import { accessWhere, escapeLike, namespaceWhere } from "./ResourceSql.ts"
import { selectorWhere } from "./SelectorSql.ts"

/** One page request: the filters, the rows the caller may list, and the keyset position. */
export interface RequestEventQuery extends RequestEventFilter {
  readonly access: AccessFilter
  /** The last event of the previous page (its ISO timestamp and id); newest first. */
  readonly after: { readonly timestamp: string; readonly id: string } | undefined
  readonly limit: number
}

/** Rows per INSERT: 20 columns × 1000 rows stays well under PostgreSQL's 65535 parameters. */
export const insertChunkSize = 1000

const StoredEvent = Schema.Struct({ ...RequestEvent.fields, timestamp: Schema.Date })
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(StoredEvent))

const present = (row: typeof StoredEvent.Type): RequestEvent => ({ ...row, timestamp: row.timestamp.toISOString() })

const nullableJsonb = (value: unknown) => (value === null ? null : jsonb(value))

/** The row of an event; the timestamp is stored at millisecond precision, as cursors carry it. */
const toRow = (event: RequestEvent) => ({
  id: event.id,
  timestamp: new Date(event.timestamp),
  namespace: event.namespace,
  type: event.type,
  method: event.method,
  host: event.host,
  path: event.path,
  response_status_code: event.response_status_code,
  response_source: event.response_source,
  connector_id: event.connector_id,
  connector_version: event.connector_version,
  connection_id: event.connection_id,
  actor_id: event.actor_id,
  duration_ms: event.duration_ms,
  labels: jsonb(event.labels),
  rate_limit_id: event.rate_limit_id,
  rate_limit_mode: event.rate_limit_mode,
  rate_limit_bucket: nullableJsonb(event.rate_limit_bucket),
  rate_limit_matched: nullableJsonb(event.rate_limit_matched),
  full_request_recorded: event.full_request_recorded
})

/** Storage of request events. Decoding failures of stored rows are defects. */
export class RequestEventRepo extends Context.Service<
  RequestEventRepo,
  {
    /**
     * Stores `events`, one multi-row INSERT per {@link insertChunkSize}; ids already stored are
     * skipped, so a batch may be written again after a failure. Returns how many rows were new.
     */
    readonly insertBatch: (events: ReadonlyArray<RequestEvent>) => Effect.Effect<number, SqlError>
    /** One page, newest first (timestamp DESC, id DESC); `more` when another page follows. */
    readonly list: (
      query: RequestEventQuery
    ) => Effect.Effect<{ readonly rows: ReadonlyArray<RequestEvent>; readonly more: boolean }, SqlError>
    readonly get: (id: string) => Effect.Effect<Option.Option<RequestEvent>, SqlError>
    /** Succeeds when the database answers (tells an outage from a rejected row). */
    readonly ping: Effect.Effect<void, SqlError>
  }
>()("@svc/sql/RequestEventRepo") {
  /** The repository over the current `SqlClient` (the app-metrics client, spec 8.2). */
  static readonly make: Effect.Effect<RequestEventRepo["Service"], never, SqlClient.SqlClient> = Effect.gen(
    function* () {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()

      const insertBatch = Effect.fn("RequestEventRepo.insertBatch")(function* (events: ReadonlyArray<RequestEvent>) {
        let inserted = 0
        for (let from = 0; from < events.length; from += insertChunkSize) {
          const [first, ...rest] = events.slice(from, from + insertChunkSize).map(toRow)
          if (first === undefined) break
          const result = yield* sql`INSERT INTO request_events ${sql.insert([first, ...rest])}
            ON CONFLICT (id) DO NOTHING RETURNING id`
          inserted += result.length
        }
        return inserted
      })

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

      const ping = Effect.asVoid(sql`SELECT 1`)

      return RequestEventRepo.of({ insertBatch, list, get, ping })
    }
  )

  /**
   * Requires the `SqlClient` of the app-metrics database with its schema migrated; the server
   * provides its `AppMetricsSql` client as `SqlClient` to this layer only.
   */
  static readonly layer: Layer.Layer<RequestEventRepo, never, SqlClient.SqlClient> = Layer.effect(
    RequestEventRepo,
    RequestEventRepo.make
  )
}
