/**
 * App-metrics schema 0002: indexes of the request-event list (API-CONVENTIONS "Request events"):
 * newest-first keyset pages on (timestamp, id), namespace paths and subtrees over time, and
 * connector over time. The (timestamp, id) index replaces the plain timestamp index.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX request_events_timestamp_id_idx ON request_events (timestamp DESC, id DESC)`
  yield* sql`DROP INDEX request_events_timestamp_idx`
  // text_pattern_ops serves both `namespace = $1` and the subtree form `namespace LIKE 'root.a.%'`.
  yield* sql`CREATE INDEX request_events_namespace_timestamp_idx
    ON request_events (namespace text_pattern_ops, timestamp DESC)`
  yield* sql`CREATE INDEX request_events_connector_timestamp_idx ON request_events (connector_id, timestamp DESC)`
})
