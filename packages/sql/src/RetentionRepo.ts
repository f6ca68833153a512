/**
 * Retention of the app-metrics database (issue 19 item 5): finds and deletes request events, their
 * per-minute rollups and resource snapshots older than a cutoff, a bounded batch per statement on the time indexes, so
 * each statement is short and ingest (inserts of new rows) is never blocked behind it.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { snapshotKinds } from "./ResourceSnapshotRepo.ts"

/** Rows per delete statement unless the caller says otherwise. */
export const retentionBatchSize = 5000

/** An expired request event: its id and whether it has a full recording (blobs to remove first). */
export interface ExpiredEvent {
  readonly id: string
  readonly recorded: boolean
}

/** Expiry of request events and resource snapshots; every method touches at most `limit` rows. */
export class RetentionRepo extends Context.Service<
  RetentionRepo,
  {
    /** The oldest events stamped before `cutoff`, at most `limit`, oldest first. */
    readonly expiredEvents: (cutoff: Date, limit: number) => Effect.Effect<ReadonlyArray<ExpiredEvent>, SqlError>
    /** Deletes the events of these ids; how many were deleted. */
    readonly deleteEvents: (ids: ReadonlyArray<string>) => Effect.Effect<number, SqlError>
    /**
     * Deletes at most `limit` per-minute rollup rows of minutes wholly before `cutoff` (a minute
     * the cutoff falls inside stays until the next pass); how many were deleted.
     */
    readonly deleteRollups: (cutoff: Date, limit: number) => Effect.Effect<number, SqlError>
    /** Deletes at most `limit` snapshot rows taken before `cutoff`; how many were deleted. */
    readonly deleteSnapshots: (cutoff: Date, limit: number) => Effect.Effect<number, SqlError>
  }
>()("@svc/sql/RetentionRepo") {
  static readonly make: Effect.Effect<RetentionRepo["Service"], never, SqlClient.SqlClient> = Effect.gen(function* () {
    const sql = (yield* SqlClient.SqlClient).withoutTransforms()

    const expiredEvents = Effect.fn("RetentionRepo.expiredEvents")(function* (cutoff: Date, limit: number) {
      // request_events_timestamp_id_idx, read backwards from the oldest row.
      const rows = yield* sql<{ readonly id: string; readonly full_request_recorded: boolean }>`
        SELECT id, full_request_recorded FROM request_events
        WHERE timestamp < ${cutoff} ORDER BY timestamp, id LIMIT ${limit}`
      return rows.map((row): ExpiredEvent => ({ id: row.id, recorded: row.full_request_recorded === true }))
    })

    const deleteEvents = Effect.fn("RetentionRepo.deleteEvents")(function* (ids: ReadonlyArray<string>) {
      if (ids.length === 0) return 0
      const rows = yield* sql`DELETE FROM request_events WHERE id IN ${sql.in(ids)} RETURNING 1 AS one`
      return rows.length
    })

    const deleteSnapshots = Effect.fn("RetentionRepo.deleteSnapshots")(function* (cutoff: Date, limit: number) {
      // The kinds lead resource_snapshots_kind_taken_idx; the row ids make the delete a TID scan.
      const rows = yield* sql`
        DELETE FROM resource_snapshots WHERE ctid = ANY(ARRAY(
          SELECT ctid FROM resource_snapshots
          WHERE kind IN ${sql.in(snapshotKinds)} AND taken_at < ${cutoff} LIMIT ${limit}))
        RETURNING 1 AS one`
      return rows.length
    })

    const deleteRollups = Effect.fn("RetentionRepo.deleteRollups")(function* (cutoff: Date, limit: number) {
      // The primary key leads with the minute; the row ids make the delete a TID scan.
      const rows = yield* sql`
        DELETE FROM request_event_rollups WHERE ctid = ANY(ARRAY(
          SELECT ctid FROM request_event_rollups
          WHERE minute <= ${new Date(cutoff.getTime() - 60_000)} ORDER BY minute LIMIT ${limit}))
        RETURNING 1 AS one`
      return rows.length
    })

    return RetentionRepo.of({ expiredEvents, deleteEvents, deleteRollups, deleteSnapshots })
  })

  /** Over the `SqlClient` of the app-metrics database (the server provides its `AppMetricsSql`). */
  static readonly layer: Layer.Layer<RetentionRepo, never, SqlClient.SqlClient> = Layer.effect(
    RetentionRepo,
    RetentionRepo.make
  )
}
