/**
 * Main schema 0003: envelope encryption (SECURITY.md "Encryption at rest") and probe health
 * (spec 4.2). Data keys are stored wrapped by the root key, one row per key version; connection
 * configuration and credentials move to ciphertext columns (the plain column is kept only until
 * the re-encryption sweep has encrypted what an earlier release stored, then it is NULL); probe
 * state drives `health_state`; the re-encryption outbox is written with each rotation.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // key_id: a `key_…` resource id, or `root` for the service-wide default data key.
  yield* sql`
    CREATE TABLE data_keys (
      key_id text NOT NULL,
      version integer NOT NULL CHECK (version > 0),
      wrapped text NOT NULL,
      root_key_id text NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (key_id, version)
    )`
  yield* sql`ALTER TABLE connections RENAME COLUMN configuration TO legacy_configuration`
  yield* sql`ALTER TABLE connections ALTER COLUMN legacy_configuration DROP NOT NULL`
  yield* sql`ALTER TABLE connections ALTER COLUMN legacy_configuration DROP DEFAULT`
  yield* sql`UPDATE connections SET legacy_configuration = NULL WHERE legacy_configuration = '{}'::jsonb`
  yield* sql`ALTER TABLE connections ADD COLUMN configuration_enc text`
  yield* sql`ALTER TABLE connections ADD COLUMN credentials_enc text`
  yield* sql`
    CREATE TABLE probe_states (
      connection_id text NOT NULL REFERENCES connections (id),
      probe_id text NOT NULL,
      consecutive_failures integer NOT NULL DEFAULT 0,
      consecutive_successes integer NOT NULL DEFAULT 0,
      failing boolean NOT NULL DEFAULT false,
      last_outcome text CHECK (last_outcome IN ('success', 'failure')),
      last_status_code integer,
      last_error text,
      last_checked_at timestamptz,
      next_run_at timestamptz NOT NULL,
      PRIMARY KEY (connection_id, probe_id)
    )`
  yield* sql`CREATE INDEX probe_states_due ON probe_states (next_run_at)`
  yield* sql`
    CREATE TABLE reencryptions (
      id bigserial PRIMARY KEY,
      key_id text NOT NULL,
      enqueued_at timestamptz NOT NULL
    )`
})
