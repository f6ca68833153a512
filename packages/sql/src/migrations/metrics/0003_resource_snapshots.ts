/**
 * App-metrics schema 0003: resource snapshots (spec 4.7): every `appMetrics.resourceSnapshotInterval`
 * a worker samples every live connection, actor, connector, connector version, namespace and
 * rate limit — one row each with its groupBy dimensions and its labels at that moment — so a
 * resource metric reads, for each step, the latest snapshot: deleted resources are absent from
 * later snapshots and a rename never rewrites an earlier one.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE resource_snapshots (
      taken_at timestamptz NOT NULL,
      kind text NOT NULL,
      resource_id text NOT NULL,
      namespace text NOT NULL,
      dims jsonb NOT NULL,
      labels jsonb NOT NULL
    )`
  yield* sql`CREATE INDEX resource_snapshots_kind_taken_idx ON resource_snapshots (kind, taken_at)`
})
