/**
 * App-metrics schema 0005 (issue 31 item 3): on the embedded PGlite only, drops the three
 * request-event indexes that no metrics query, retention statement or keyset page needs —
 * `labels` (GIN), (namespace, timestamp) and (connector_id, timestamp). Every event written paid
 * for them in WebAssembly on the proxy's own core (about 10 µs of the ~45 µs per event,
 * docs/performance.md "Request events on PGlite: fewer indexes"); without them a list filtered by
 * namespace, connector or labels walks (timestamp, id) newest first and stops at its page.
 * Kept: the primary key (get, idempotent inserts, retention deletes), (timestamp, id) (pages,
 * retention, time ranges) and (connection_id, timestamp) (a connection's recent events).
 * PostgreSQL keeps all of them: there the upkeep runs in the database server, not in svc's
 * process, and its tables are ten times larger, where a rare filter value without its index
 * would scan millions of rows.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ readonly pglite: boolean }>`SELECT version() LIKE '%PGlite%' AS pglite`
  if (row?.pglite !== true) return
  yield* sql`DROP INDEX request_events_labels_gin`
  yield* sql`DROP INDEX request_events_namespace_timestamp_idx`
  yield* sql`DROP INDEX request_events_connector_timestamp_idx`
})
