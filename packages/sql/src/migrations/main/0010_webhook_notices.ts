/**
 * Main schema 0010: namespace-level notices about a webhook endpoint (issue 34: an endpoint
 * auto-disabled after failing for `webhooks.disable_after` is announced to the namespace's
 * actors). A notice now belongs to exactly one subject: a connection (as before) or a webhook
 * endpoint; at most one active notice per (endpoint, key). Re-enabling or deleting the endpoint
 * resolves its active notices in the same statement, whichever code path makes the change.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE notifications ALTER COLUMN connection_id DROP NOT NULL`
  yield* sql`ALTER TABLE notifications ADD COLUMN webhook_id text REFERENCES webhooks (id)`
  yield* sql`ALTER TABLE notifications ADD CONSTRAINT notifications_one_subject
    CHECK (num_nonnulls(connection_id, webhook_id) = 1)`
  yield* sql`CREATE UNIQUE INDEX notifications_webhook_key_active ON notifications (webhook_id, key)
    WHERE resolved_at IS NULL AND webhook_id IS NOT NULL`

  yield* sql.unsafe(`
    CREATE FUNCTION svc_webhook_resolve_notices() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE notifications SET resolved_at = now(), updated_at = now()
      WHERE webhook_id = NEW.id AND resolved_at IS NULL;
      RETURN NULL;
    END $$`)
  yield* sql`
    CREATE TRIGGER webhooks_resolve_notices AFTER UPDATE ON webhooks
    FOR EACH ROW
    WHEN ((NEW.state = 'enabled' AND OLD.state IS DISTINCT FROM 'enabled')
      OR (NEW.deleted_at IS NOT NULL AND OLD.deleted_at IS NULL))
    EXECUTE FUNCTION svc_webhook_resolve_notices()`
})
