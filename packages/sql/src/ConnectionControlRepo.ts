/**
 * Storage of the `Connection` entity's control state (ARCHITECTURE "The Connection entity"): one
 * `connection_controls` row per connection id with any state — the consecutive upstream 429
 * count and cool-down end (spec 2.9) and the migration lock (spec 4.3 rule 6). The entity is the
 * single writer: it reads the row on activation and writes it before replying to each change.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

/** The migration lock's holder and when its hold lapses (epoch milliseconds). */
export interface MigrationLockHold {
  readonly owner: string
  readonly expiresAt: number
}

/** A connection's control state; times are epoch milliseconds. */
export interface ConnectionControl {
  readonly consecutive429s: number
  readonly coolDownUntil: Option.Option<number>
  readonly migrationLock: Option.Option<MigrationLockHold>
}

/** The state of a connection without a row: no 429 streak, no cool-down, no lock. */
export const emptyControl: ConnectionControl = {
  consecutive429s: 0,
  coolDownUntil: Option.none(),
  migrationLock: Option.none()
}

/** True when the state holds nothing worth a row. */
export const isEmptyControl = (control: ConnectionControl): boolean =>
  control.consecutive429s === 0 && Option.isNone(control.coolDownUntil) && Option.isNone(control.migrationLock)

const ControlRow = Schema.Struct({
  consecutive429s: Schema.Number,
  coolDownUntil: Schema.NullOr(Schema.Date),
  migrationLockOwner: Schema.NullOr(Schema.String),
  migrationLockExpiresAt: Schema.NullOr(Schema.Date)
})
type ControlRow = typeof ControlRow.Type

const fromRow = (row: ControlRow): ConnectionControl => ({
  consecutive429s: row.consecutive429s,
  coolDownUntil: Option.map(Option.fromNullOr(row.coolDownUntil), (date) => date.getTime()),
  migrationLock:
    row.migrationLockOwner === null || row.migrationLockExpiresAt === null
      ? Option.none()
      : Option.some({ owner: row.migrationLockOwner, expiresAt: row.migrationLockExpiresAt.getTime() })
})

const dateOrNull = (epochMs: Option.Option<number>): Date | null =>
  Option.match(epochMs, { onNone: () => null, onSome: (ms) => new Date(ms) })

/** Reads and writes `connection_controls`. */
export class ConnectionControlRepo extends Context.Service<
  ConnectionControlRepo,
  {
    /** The stored state of a connection; `emptyControl` when it has no row. */
    readonly find: (connectionId: string) => Effect.Effect<ConnectionControl, SqlError>
    /**
     * Like `find`, and locks the row until the transaction ends, so a stale owner of the entity
     * (a runner that lost its shard) cannot interleave a write.
     */
    readonly findForUpdate: (connectionId: string) => Effect.Effect<ConnectionControl, SqlError>
    /** Stores the state (upsert), or deletes the row when the state is empty. */
    readonly save: (connectionId: string, control: ConnectionControl, now: Date) => Effect.Effect<void, SqlError>
    /**
     * The `rate_limiting` block (undecoded; null when the definition omits it) of the connector
     * version the connection is on now; none for an unknown or deleted connection.
     */
    readonly rateLimiting: (connectionId: string) => Effect.Effect<Option.Option<unknown>, SqlError>
  }
>()("@svc/sql/ConnectionControlRepo") {
  static readonly layer: Layer.Layer<ConnectionControlRepo, never, SqlClient.SqlClient> = Layer.effect(
    ConnectionControlRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const select = (forUpdate: boolean) =>
        SqlSchema.findOneOption({
          Request: Schema.String,
          Result: ControlRow,
          execute: (connectionId) =>
            sql`SELECT consecutive_429s, cool_down_until, migration_lock_owner, migration_lock_expires_at
              FROM connection_controls WHERE connection_id = ${connectionId}${forUpdate ? sql` FOR UPDATE` : sql``}`
        })
      const selectRow = select(false)
      const selectRowForUpdate = select(true)

      // Our own rows failing to decode is a defect, never a typed error.
      const read = (row: Effect.Effect<Option.Option<ControlRow>, SqlError | Schema.SchemaError>) =>
        row.pipe(
          Effect.catchTag("SchemaError", (error) => Effect.die(error)),
          Effect.map(Option.match({ onNone: () => emptyControl, onSome: fromRow }))
        )

      const find = (connectionId: string) =>
        read(selectRow(connectionId)).pipe(Effect.withSpan("ConnectionControlRepo.find"))

      const findForUpdate = (connectionId: string) =>
        read(selectRowForUpdate(connectionId)).pipe(Effect.withSpan("ConnectionControlRepo.findForUpdate"))

      const save = Effect.fn("ConnectionControlRepo.save")(function* (
        connectionId: string,
        control: ConnectionControl,
        now: Date
      ) {
        if (isEmptyControl(control)) {
          yield* sql`DELETE FROM connection_controls WHERE connection_id = ${connectionId}`
          return
        }
        const lock = Option.getOrUndefined(control.migrationLock)
        const coolDownUntil = dateOrNull(control.coolDownUntil)
        const lockExpiresAt = lock === undefined ? null : new Date(lock.expiresAt)
        yield* sql`INSERT INTO connection_controls
            (connection_id, consecutive_429s, cool_down_until, migration_lock_owner, migration_lock_expires_at, updated_at)
          VALUES (${connectionId}, ${control.consecutive429s}, ${coolDownUntil}, ${lock?.owner ?? null},
            ${lockExpiresAt}, ${now})
          ON CONFLICT (connection_id) DO UPDATE SET
            consecutive_429s = EXCLUDED.consecutive_429s,
            cool_down_until = EXCLUDED.cool_down_until,
            migration_lock_owner = EXCLUDED.migration_lock_owner,
            migration_lock_expires_at = EXCLUDED.migration_lock_expires_at,
            updated_at = EXCLUDED.updated_at`
      })

      const rateLimiting = Effect.fn("ConnectionControlRepo.rateLimiting")(function* (connectionId: string) {
        const rows = yield* sql<{ readonly rateLimiting: unknown }>`
          SELECT v.definition->'rate_limiting' AS rate_limiting
          FROM connections c
          JOIN connector_versions v ON v.connector_id = c.connector_id AND v.version = c.connector_version
          WHERE c.id = ${connectionId} AND c.deleted_at IS NULL`
        const row = rows[0]
        if (row === undefined) return Option.none()
        return Option.some(typeof row.rateLimiting === "string" ? JSON.parse(row.rateLimiting) : row.rateLimiting)
      })

      return ConnectionControlRepo.of({ find, findForUpdate, save, rateLimiting })
    })
  )
}
