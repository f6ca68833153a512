/**
 * Background tasks (spec 3.3, 4.5): the `tasks` rows of lifecycle runs, and the connector-level
 * steps their workflows take (listing the connections to disconnect, forcing the rest, the
 * archive's version transitions). A run's `lock_key` is unique among active runs: `create` with a
 * key another active run holds answers `Locked` (the caller's 409 `operation_in_progress`).
 */
import { Context, Effect, Layer, type Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

/** A task row. */
export const TaskRow = Schema.Struct({
  id: Schema.String,
  type: Schema.String,
  actorId: Schema.String,
  subjectId: Schema.String,
  executionId: Schema.String,
  state: Schema.Literals(["active", "completed", "failed"]),
  error: Schema.NullOr(Schema.String),
  progressTotal: Schema.NullOr(Schema.Number),
  progressDone: Schema.Number,
  createdAt: Schema.Date,
  updatedAt: Schema.Date
})
export type TaskRow = typeof TaskRow.Type

/** A new task. */
export interface NewTask {
  readonly id: string
  readonly type: string
  readonly actorId: string
  readonly subjectId: string
  /** What only one active run may work on; null for none. */
  readonly lockKey: string | null
  readonly executionId: string
  readonly now: Date
}

/** Connection states a disconnect-all ends (spec 4.5 rule 1). */
export const disconnectableStates = ["setup", "configured", "disabled", "disconnecting"] as const

export class TaskRepo extends Context.Service<
  TaskRepo,
  {
    /** Inserts the task; `"Locked"` when an active run already holds its lock key. */
    readonly create: (task: NewTask) => Effect.Effect<"Created" | "Locked", SqlError>
    /**
     * Inserts a `disconnect` task of connection `task.subjectId` and, in the same statement, sets
     * that connection `disconnecting` (unless it is already disconnected): the state holds from the
     * moment the caller is answered (spec 3.1). `"Locked"` (nothing written) when a run holds the lock.
     */
    readonly createDisconnect: (task: NewTask) => Effect.Effect<"Created" | "Locked", SqlError>
    readonly find: (id: string) => Effect.Effect<Option.Option<TaskRow>, SqlError>
    /** Records how many items the run has (once known). */
    readonly setTotal: (id: string, total: number, now: Date) => Effect.Effect<void, SqlError>
    /** One more item done (never past the total). */
    readonly stepDone: (id: string, now: Date) => Effect.Effect<void, SqlError>
    /** Ends an active run: its state and error; its lock key is freed. No effect on an ended run. */
    readonly finish: (
      id: string,
      state: "completed" | "failed",
      error: string | null,
      now: Date
    ) => Effect.Effect<void, SqlError>
    /** Whether a task of this type on this subject is still active. */
    readonly hasActive: (type: string, subjectId: string) => Effect.Effect<boolean, SqlError>
    /** Active (not yet finished) tasks by type; a type without one is absent. */
    readonly activeCounts: () => Effect.Effect<
      ReadonlyArray<{ readonly type: string; readonly count: number }>,
      SqlError
    >
    /** Ids of the connector's live connections in a state a disconnect-all ends, oldest first. */
    readonly disconnectable: (connectorId: string) => Effect.Effect<ReadonlyArray<string>, SqlError>
    /** Forces the connector's remaining live connections to `disconnected`, soft-deleted; how many. */
    readonly forceDisconnected: (connectorId: string, now: Date) => Effect.Effect<number, SqlError>
    /** Archive preparation (spec 3.2): draft → archived, primary → active. */
    readonly prepareArchive: (connectorId: string, now: Date) => Effect.Effect<void, SqlError>
    /** Archive finalize (spec 3.2): every version → archived. */
    readonly finalizeArchive: (connectorId: string, now: Date) => Effect.Effect<void, SqlError>
  }
>()("@svc/sql/TaskRepo") {
  static readonly layer: Layer.Layer<TaskRepo, never, SqlClient.SqlClient> = Layer.effect(
    TaskRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const create = Effect.fn("TaskRepo.create")(function* (task: NewTask) {
        const rows = yield* sql`
          INSERT INTO tasks (id, type, actor_id, subject_id, lock_key, execution_id, state, created_at, updated_at)
          VALUES (${task.id}, ${task.type}, ${task.actorId}, ${task.subjectId}, ${task.lockKey}, ${task.executionId},
            'active', ${task.now}, ${task.now})
          ON CONFLICT (lock_key) WHERE lock_key IS NOT NULL DO NOTHING
          RETURNING id`
        return rows.length === 1 ? ("Created" as const) : ("Locked" as const)
      })

      const createDisconnect = Effect.fn("TaskRepo.createDisconnect")(function* (task: NewTask) {
        const rows = yield* sql`
          WITH created AS (
            INSERT INTO tasks (id, type, actor_id, subject_id, lock_key, execution_id, state, created_at, updated_at)
            VALUES (${task.id}, ${task.type}, ${task.actorId}, ${task.subjectId}, ${task.lockKey}, ${task.executionId},
              'active', ${task.now}, ${task.now})
            ON CONFLICT (lock_key) WHERE lock_key IS NOT NULL DO NOTHING
            RETURNING id
          ), marked AS (
            UPDATE connections SET state = 'disconnecting', updated_at = ${task.now}
            WHERE id = ${task.subjectId} AND deleted_at IS NULL AND state <> 'disconnected'
              AND EXISTS (SELECT 1 FROM created)
            RETURNING id
          )
          SELECT id FROM created`
        return rows.length === 1 ? ("Created" as const) : ("Locked" as const)
      })

      const selectTask = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: TaskRow,
        execute: (id) =>
          sql`SELECT id, type, actor_id, subject_id, execution_id, state, error, progress_total, progress_done,
              created_at, updated_at FROM tasks WHERE id = ${id}`
      })
      const find = (id: string) =>
        selectTask(id).pipe(
          Effect.catchTag("SchemaError", (error) => Effect.die(error)),
          Effect.withSpan("TaskRepo.find")
        )

      const setTotal = Effect.fn("TaskRepo.setTotal")(function* (id: string, total: number, now: Date) {
        yield* sql`UPDATE tasks SET progress_total = ${total}, updated_at = ${now} WHERE id = ${id}`
      })

      const stepDone = Effect.fn("TaskRepo.stepDone")(function* (id: string, now: Date) {
        yield* sql`UPDATE tasks SET progress_done = progress_done + 1, updated_at = ${now}
          WHERE id = ${id} AND (progress_total IS NULL OR progress_done < progress_total)`
      })

      const finish = Effect.fn("TaskRepo.finish")(function* (
        id: string,
        state: "completed" | "failed",
        error: string | null,
        now: Date
      ) {
        yield* sql`UPDATE tasks SET state = ${state}, error = ${error}, lock_key = NULL, updated_at = ${now}
          WHERE id = ${id} AND state = 'active'`
      })

      const hasActive = Effect.fn("TaskRepo.hasActive")(function* (type: string, subjectId: string) {
        const rows =
          yield* sql`SELECT 1 FROM tasks WHERE subject_id = ${subjectId} AND type = ${type} AND state = 'active' LIMIT 1`
        return rows.length > 0
      })

      const activeCounts = Effect.fn("TaskRepo.activeCounts")(function* () {
        const rows = yield* sql<{ readonly type: string; readonly count: number | string }>`
          SELECT type, count(*)::int AS count FROM tasks WHERE state = 'active' GROUP BY type`
        return rows.map((row) => ({ type: row.type, count: Number(row.count) }))
      })

      const disconnectable = Effect.fn("TaskRepo.disconnectable")(function* (connectorId: string) {
        const rows = yield* sql<{ readonly id: string }>`
          SELECT id FROM connections
          WHERE connector_id = ${connectorId} AND deleted_at IS NULL AND state IN ${sql.in(disconnectableStates)}
          ORDER BY created_at, id`
        return rows.map((row) => row.id)
      })

      const forceDisconnected = Effect.fn("TaskRepo.forceDisconnected")(function* (connectorId: string, now: Date) {
        const rows = yield* sql`
          UPDATE connections SET state = 'disconnected', credentials_enc = NULL, token_refresh_due_at = NULL,
            updated_at = ${now}, deleted_at = ${now}
          WHERE connector_id = ${connectorId} AND deleted_at IS NULL AND state IN ${sql.in(disconnectableStates)}
          RETURNING id`
        return rows.length
      })

      const refreshConnector = (connectorId: string, now: Date) =>
        sql`
          UPDATE connectors SET state = v.state, version = v.version, type = v.definition->>'type', updated_at = ${now}
          FROM (
            SELECT state, version, definition FROM connector_versions WHERE connector_id = ${connectorId}
            ORDER BY CASE state WHEN 'primary' THEN 0 WHEN 'active' THEN 1 WHEN 'draft' THEN 2 ELSE 3 END, version DESC
            LIMIT 1
          ) AS v
          WHERE connectors.id = ${connectorId}`

      const prepareArchive = Effect.fn("TaskRepo.prepareArchive")(function* (connectorId: string, now: Date) {
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`UPDATE connector_versions
              SET state = CASE state WHEN 'draft' THEN 'archived' ELSE 'active' END, updated_at = ${now}
              WHERE connector_id = ${connectorId} AND state IN ('draft', 'primary')`
            yield* refreshConnector(connectorId, now)
          })
        )
      })

      const finalizeArchive = Effect.fn("TaskRepo.finalizeArchive")(function* (connectorId: string, now: Date) {
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`UPDATE connector_versions SET state = 'archived', updated_at = ${now}
              WHERE connector_id = ${connectorId} AND state <> 'archived'`
            yield* refreshConnector(connectorId, now)
          })
        )
      })

      return TaskRepo.of({
        create,
        createDisconnect,
        find,
        setTotal,
        stepDone,
        finish,
        hasActive,
        activeCounts,
        disconnectable,
        forceDisconnected,
        prepareArchive,
        finalizeArchive
      })
    })
  )
}
