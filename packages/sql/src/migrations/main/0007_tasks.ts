/**
 * Main schema 0007: background tasks (spec 3.3, 4.5; API-CONVENTIONS "Tasks and notifications"),
 * one row per started lifecycle run: its kind, the actor that started it (only that actor sees
 * it), what it works on, the workflow execution it names, its state, error and progress. While a
 * run is active its `lock_key` holds what only one run may work on at a time (the connector for
 * disconnect-all and archive, the connection for a disconnect); the unique index refuses a second
 * start, and ending the run clears the key so a new run may start.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE tasks (
      id text PRIMARY KEY,
      type text NOT NULL,
      actor_id text NOT NULL,
      subject_id text NOT NULL,
      lock_key text,
      execution_id text NOT NULL,
      state text NOT NULL CHECK (state IN ('active', 'completed', 'failed')),
      error text,
      progress_total integer CHECK (progress_total >= 0),
      progress_done integer NOT NULL DEFAULT 0 CHECK (progress_done >= 0),
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      CHECK (state = 'active' OR lock_key IS NULL)
    )`
  yield* sql`CREATE UNIQUE INDEX tasks_one_active ON tasks (lock_key) WHERE lock_key IS NOT NULL`
})
