/**
 * Main schema 0004: connection notifications (spec 2.10, 2.11, 4.4). At most one active notice
 * per (connection, key): a resolved notice keeps its row for history and frees the key. Each
 * notice carries its connection's namespace so lists are filtered by permission in SQL; `viewed`
 * is per actor.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE notifications (
      id text PRIMARY KEY,
      connection_id text NOT NULL REFERENCES connections (id),
      namespace text NOT NULL,
      key text NOT NULL,
      level text NOT NULL CHECK (level IN ('info', 'warning', 'error')),
      title text NOT NULL,
      message text NOT NULL,
      action_url text,
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      resolved_at timestamptz
    )`
  // spec 2.11: an active notice is reused under its key, never duplicated.
  yield* sql`CREATE UNIQUE INDEX notifications_connection_key_active ON notifications (connection_id, key) WHERE resolved_at IS NULL`
  yield* sql`CREATE INDEX notifications_active_created ON notifications (created_at, id) WHERE resolved_at IS NULL`
  yield* sql`CREATE INDEX notifications_namespace ON notifications (namespace text_pattern_ops) WHERE resolved_at IS NULL`
  yield* sql`
    CREATE TABLE notification_views (
      notification_id text NOT NULL REFERENCES notifications (id),
      actor_id text NOT NULL REFERENCES actors (id),
      viewed_at timestamptz NOT NULL,
      PRIMARY KEY (notification_id, actor_id)
    )`
})
