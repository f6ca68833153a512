/**
 * Main schema 0008: finds a subject's active tasks without scanning the table (a second
 * `_migrate_version` start while a run is active answers 409 even after the run's transaction
 * switched the version; API-CONVENTIONS "Tasks and notifications").
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX tasks_active_subject ON tasks (subject_id, type) WHERE state = 'active'`
})
