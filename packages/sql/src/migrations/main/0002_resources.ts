/**
 * Main schema 0002: the resource model (spec 2): connectors and versions, connections, keys,
 * rate limits; names unique per (namespace) among live rows; the label-propagation outbox and
 * the maintenance clock of the consistency checker (spec 2.4).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const envelope = `
  namespace text NOT NULL,
  name text NOT NULL,
  labels jsonb NOT NULL DEFAULT '{}'::jsonb,
  annotations jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz`

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  // Namespaces: soft-deleted rows keep their path, so the path is unique among live rows only.
  yield* sql`ALTER TABLE namespaces DROP CONSTRAINT namespaces_pkey`
  yield* sql`ALTER TABLE namespaces ADD COLUMN row_id bigserial PRIMARY KEY`
  yield* sql`ALTER TABLE namespaces ADD COLUMN namespace text`
  yield* sql`UPDATE namespaces SET namespace = path`
  yield* sql`ALTER TABLE namespaces ALTER COLUMN namespace SET NOT NULL`
  yield* sql`CREATE UNIQUE INDEX namespaces_path_live ON namespaces (path) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX namespaces_path_pattern ON namespaces (path text_pattern_ops)`
  // The root's implicit labels (spec 2.3); created_at/updated_at at millisecond precision.
  yield* sql`
    UPDATE namespaces SET
      labels = jsonb_build_object('svc/ns/-/id', 'root', 'svc/ns/-/name', 'root', 'svc/ns/-/ns', 'root'),
      created_at = date_trunc('milliseconds', created_at),
      updated_at = date_trunc('milliseconds', updated_at)
    WHERE path = 'root'`

  // Actors: every actor has a name (its id when none was given, spec 2.2 rule 2).
  yield* sql`UPDATE actors SET name = id WHERE name IS NULL`
  yield* sql`ALTER TABLE actors ALTER COLUMN name SET NOT NULL`
  yield* sql`CREATE INDEX actors_namespace ON actors (namespace text_pattern_ops) WHERE deleted_at IS NULL`

  yield* sql.unsafe(`
    CREATE TABLE connectors (
      id text PRIMARY KEY,${envelope},
      state text NOT NULL CHECK (state IN ('draft', 'primary', 'active', 'archived')),
      version integer NOT NULL,
      type text NOT NULL
    )`)
  yield* sql`CREATE UNIQUE INDEX connectors_namespace_name_live ON connectors (namespace, name) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX connectors_namespace ON connectors (namespace text_pattern_ops) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX connectors_labels_gin ON connectors USING gin (labels)`

  yield* sql`
    CREATE TABLE connector_versions (
      connector_id text NOT NULL REFERENCES connectors (id),
      version integer NOT NULL CHECK (version > 0),
      state text NOT NULL CHECK (state IN ('draft', 'primary', 'active', 'archived')),
      definition jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      PRIMARY KEY (connector_id, version)
    )`
  // spec 3.2: at most one primary version per connector.
  yield* sql`CREATE UNIQUE INDEX connector_versions_one_primary ON connector_versions (connector_id) WHERE state = 'primary'`

  yield* sql.unsafe(`
    CREATE TABLE connections (
      id text PRIMARY KEY,${envelope},
      connector_id text NOT NULL REFERENCES connectors (id),
      connector_version integer NOT NULL,
      state text NOT NULL CHECK (state IN ('setup', 'configured', 'disabled', 'disconnecting', 'disconnected')),
      health_state text NOT NULL CHECK (health_state IN ('healthy', 'unhealthy')),
      setup_step_id text,
      configuration jsonb NOT NULL DEFAULT '{}'::jsonb,
      FOREIGN KEY (connector_id, connector_version) REFERENCES connector_versions (connector_id, version)
    )`)
  yield* sql`CREATE UNIQUE INDEX connections_namespace_name_live ON connections (namespace, name) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX connections_namespace ON connections (namespace text_pattern_ops) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX connections_connector ON connections (connector_id) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX connections_created ON connections (created_at, id) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX connections_labels_gin ON connections USING gin (labels)`

  yield* sql.unsafe(`CREATE TABLE keys (id text PRIMARY KEY,${envelope})`)
  yield* sql`CREATE UNIQUE INDEX keys_namespace_name_live ON keys (namespace, name) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX keys_labels_gin ON keys USING gin (labels)`

  yield* sql.unsafe(`
    CREATE TABLE rate_limits (
      id text PRIMARY KEY,${envelope},
      definition jsonb NOT NULL,
      mode text NOT NULL CHECK (mode IN ('enforce', 'observe'))
    )`)
  yield* sql`CREATE UNIQUE INDEX rate_limits_namespace_name_live ON rate_limits (namespace, name) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX rate_limits_labels_gin ON rate_limits USING gin (labels)`

  // spec 2.4 rule 3: label changes on parents queue a durable rewrite of descendants.
  yield* sql`
    CREATE TABLE label_propagations (
      id bigserial PRIMARY KEY,
      parent_type text NOT NULL CHECK (parent_type IN ('namespace', 'connector')),
      parent_id text NOT NULL,
      enqueued_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE maintenance_runs (
      name text PRIMARY KEY,
      last_run_at timestamptz NOT NULL
    )`
})
