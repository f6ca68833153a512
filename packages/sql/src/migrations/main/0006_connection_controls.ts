/**
 * Main schema 0006: the control state of the `Connection` entity (ARCHITECTURE "The Connection
 * entity"), one row per connection id that has any: the consecutive upstream 429 count and the
 * current cool-down end (spec 2.9), and the migration lock holder with its expiry (spec 4.3
 * rule 6). The entity is the only writer; it reads its row on activation, so the state survives a
 * runner crash and a shard move. A row whose state is all clear is deleted.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE connection_controls (
      connection_id text PRIMARY KEY,
      consecutive_429s integer NOT NULL DEFAULT 0 CHECK (consecutive_429s >= 0),
      cool_down_until timestamptz,
      migration_lock_owner text,
      migration_lock_expires_at timestamptz,
      updated_at timestamptz NOT NULL,
      CHECK ((migration_lock_owner IS NULL) = (migration_lock_expires_at IS NULL))
    )`
})
