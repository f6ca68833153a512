/** App-metrics schema 0001: request events (spec 2.12; API-CONVENTIONS "Request events"). */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE request_events (
      id text PRIMARY KEY,
      timestamp timestamptz NOT NULL,
      namespace text NOT NULL,
      type text NOT NULL,
      method text NOT NULL,
      host text NOT NULL,
      path text NOT NULL,
      response_status_code integer,
      response_source text CHECK (response_source IN ('upstream', 'connector_rate_limiter', 'rate_limit')),
      connector_id text,
      connector_version integer,
      connection_id text,
      actor_id text,
      duration_ms double precision NOT NULL,
      labels jsonb NOT NULL DEFAULT '{}'::jsonb,
      rate_limit_id text,
      rate_limit_mode text CHECK (rate_limit_mode IN ('enforce', 'observe')),
      rate_limit_bucket jsonb,
      rate_limit_matched jsonb,
      full_request_recorded boolean NOT NULL DEFAULT false
    )`
  yield* sql`CREATE INDEX request_events_timestamp_idx ON request_events (timestamp)`
  yield* sql`CREATE INDEX request_events_connection_timestamp_idx ON request_events (connection_id, timestamp)`
  yield* sql`CREATE INDEX request_events_labels_gin ON request_events USING gin (labels)`
})
