/** Main schema 0001: namespaces (with the `root` row) and actors. */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE namespaces (
      path text PRIMARY KEY,
      name text NOT NULL,
      labels jsonb NOT NULL DEFAULT '{}'::jsonb,
      annotations jsonb NOT NULL DEFAULT '{}'::jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    )`
  yield* sql`CREATE INDEX namespaces_labels_gin ON namespaces USING gin (labels)`
  yield* sql`INSERT INTO namespaces (path, name) VALUES ('root', 'root')`
  yield* sql`
    CREATE TABLE actors (
      id text PRIMARY KEY,
      external_id text NOT NULL,
      namespace text NOT NULL,
      name text,
      labels jsonb NOT NULL DEFAULT '{}'::jsonb,
      annotations jsonb NOT NULL DEFAULT '{}'::jsonb,
      permissions jsonb NOT NULL DEFAULT '[]'::jsonb,
      source text NOT NULL CHECK (source IN ('config', 'api')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      deleted_at timestamptz
    )`
  yield* sql`CREATE UNIQUE INDEX actors_external_id_live ON actors (external_id) WHERE deleted_at IS NULL`
  // spec 2.2 rule 3: a name is unique among live resources of one type in one namespace
  yield* sql`CREATE UNIQUE INDEX actors_namespace_name_live ON actors (namespace, name) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX actors_labels_gin ON actors USING gin (labels)`
})
