/**
 * Main schema 0005: OAuth2 connections (spec 2.7, 5.9). `granted_scopes` records what the
 * provider granted (not secret; the tokens stay in `credentials_enc`). `token_refresh_due_at` is
 * when the background sweep refreshes the token (expiry minus the refresh window, or the default
 * interval when the provider gave no lifetime); NULL for connections without a refreshable token.
 * `setup_return_url` is where the browser returns after an interactive setup's OAuth2 step.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE connections ADD COLUMN granted_scopes jsonb`
  yield* sql`ALTER TABLE connections ADD COLUMN token_refresh_due_at timestamptz`
  yield* sql`ALTER TABLE connections ADD COLUMN setup_return_url text`
  yield* sql`CREATE INDEX connections_token_refresh_due ON connections (token_refresh_due_at) WHERE deleted_at IS NULL AND token_refresh_due_at IS NOT NULL`
})
