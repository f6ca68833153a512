/**
 * Main schema 0009: webhooks to the host (API-CONVENTIONS "Webhooks to the host").
 *
 * - `webhooks`: the namespace-scoped endpoint resource; its signing secret is a ciphertext.
 * - `webhook_events`: the outbox. Triggers on `connections`, `notifications`, `connection_controls`
 *   and `tasks` write one row per reported change in the same transaction as the change itself,
 *   whichever code path makes it; `seq` orders events (a receiver orders one connection's events by
 *   it). Nothing but ids, states, versions and times is copied: never a credential or configuration
 *   value. While no live endpoint exists nothing is written. The writer of a health change may name
 *   its reason in the transaction-local setting `svc.webhook_reason` (a migration's is implied).
 * - `webhook_deliveries`: one row per (endpoint, event) written by the worker's fan-out, with its
 *   state, attempts, last status and the lease of the worker sending it.
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
  yield* sql.unsafe(`
    CREATE TABLE webhooks (
      id text PRIMARY KEY,${envelope},
      url text NOT NULL,
      events jsonb,
      label_selector text,
      description text,
      secret_enc text NOT NULL,
      state text NOT NULL DEFAULT 'enabled' CHECK (state IN ('enabled', 'disabled')),
      failing_since timestamptz
    )`)
  yield* sql`CREATE UNIQUE INDEX webhooks_namespace_name_live ON webhooks (namespace, name) WHERE deleted_at IS NULL`
  yield* sql`CREATE INDEX webhooks_labels_gin ON webhooks USING gin (labels)`

  yield* sql`
    CREATE TABLE webhook_events (
      seq bigserial PRIMARY KEY,
      type text NOT NULL,
      namespace text NOT NULL,
      labels jsonb NOT NULL DEFAULT '{}'::jsonb,
      data jsonb NOT NULL,
      webhook_id text,
      created_at timestamptz NOT NULL,
      dispatched_at timestamptz
    )`
  yield* sql`CREATE INDEX webhook_events_undispatched ON webhook_events (seq) WHERE dispatched_at IS NULL`

  yield* sql`
    CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      webhook_id text NOT NULL,
      namespace text NOT NULL,
      event_seq bigint NOT NULL,
      message_id text NOT NULL,
      event_type text NOT NULL,
      state text NOT NULL CHECK (state IN ('pending', 'succeeded', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      last_status_code integer,
      last_error text,
      next_attempt_at timestamptz,
      lease_until timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`
  yield* sql`CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (webhook_id, event_seq)`
  yield* sql`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_log ON webhook_deliveries (webhook_id, created_at DESC, id DESC)`

  // One outbox row; nothing while no live endpoint could receive it.
  yield* sql.unsafe(`
    CREATE FUNCTION svc_webhook_event(event_type text, event_namespace text, event_labels jsonb, event_data jsonb)
    RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
      IF EXISTS (SELECT 1 FROM webhooks WHERE deleted_at IS NULL AND state = 'enabled') THEN
        INSERT INTO webhook_events (type, namespace, labels, data, created_at)
        VALUES (event_type, event_namespace, coalesce(event_labels, '{}'::jsonb), event_data, now());
      END IF;
    END $$`)

  yield* sql.unsafe(`
    CREATE FUNCTION svc_webhook_connection_events() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      base jsonb := jsonb_build_object('connection_id', NEW.id, 'namespace', NEW.namespace,
        'connector_id', NEW.connector_id);
    BEGIN
      IF TG_OP = 'INSERT' THEN
        PERFORM svc_webhook_event('connection.created', NEW.namespace, NEW.labels,
          base || jsonb_build_object('state', NEW.state, 'connector_version', NEW.connector_version));
        IF NEW.state = 'configured' THEN
          PERFORM svc_webhook_event('connection.configured', NEW.namespace, NEW.labels, base);
        END IF;
        RETURN NULL;
      END IF;
      IF NEW.state IS DISTINCT FROM OLD.state THEN
        IF NEW.state = 'configured' AND OLD.state = 'setup' THEN
          PERFORM svc_webhook_event('connection.configured', NEW.namespace, NEW.labels, base);
        ELSIF NEW.state = 'disconnected' THEN
          PERFORM svc_webhook_event('connection.disconnected', NEW.namespace, NEW.labels, base);
        END IF;
      END IF;
      IF NEW.health_state IS DISTINCT FROM OLD.health_state THEN
        PERFORM svc_webhook_event('connection.health_changed', NEW.namespace, NEW.labels,
          base || jsonb_build_object('health_state', NEW.health_state, 'previous', OLD.health_state,
            'reason', coalesce(nullif(current_setting('svc.webhook_reason', true), ''),
              CASE WHEN NEW.connector_version IS DISTINCT FROM OLD.connector_version THEN 'migration' END)));
      END IF;
      IF NEW.connector_version IS DISTINCT FROM OLD.connector_version THEN
        PERFORM svc_webhook_event('connection.migrated', NEW.namespace, NEW.labels,
          base || jsonb_build_object('source_version', OLD.connector_version, 'target_version', NEW.connector_version));
      END IF;
      RETURN NULL;
    END $$`)
  yield* sql`
    CREATE TRIGGER connections_webhook_events AFTER INSERT OR UPDATE ON connections
    FOR EACH ROW EXECUTE FUNCTION svc_webhook_connection_events()`

  // The built-in required-action notices (re-authorization, setup) as they are raised.
  yield* sql.unsafe(`
    CREATE FUNCTION svc_webhook_notification_events() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      c record;
    BEGIN
      IF NEW.key NOT IN ('svc.reauth', 'svc.setup') THEN
        RETURN NULL;
      END IF;
      SELECT id, namespace, connector_id, labels INTO c FROM connections WHERE id = NEW.connection_id;
      IF NOT FOUND THEN
        RETURN NULL;
      END IF;
      PERFORM svc_webhook_event(
        CASE NEW.key WHEN 'svc.reauth' THEN 'connection.reauthorization_required' ELSE 'connection.setup_required' END,
        c.namespace, c.labels,
        jsonb_build_object('connection_id', c.id, 'namespace', c.namespace, 'connector_id', c.connector_id));
      RETURN NULL;
    END $$`)
  yield* sql`
    CREATE TRIGGER notifications_webhook_events AFTER INSERT ON notifications
    FOR EACH ROW EXECUTE FUNCTION svc_webhook_notification_events()`

  // A cool-down starts when none was running at the time of the write.
  yield* sql.unsafe(`
    CREATE FUNCTION svc_webhook_cool_down_events() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      c record;
    BEGIN
      IF NEW.cool_down_until IS NULL OR NEW.cool_down_until <= NEW.updated_at THEN
        RETURN NULL;
      END IF;
      IF TG_OP = 'UPDATE' AND OLD.cool_down_until IS NOT NULL AND OLD.cool_down_until > NEW.updated_at THEN
        RETURN NULL;
      END IF;
      SELECT id, namespace, connector_id, labels INTO c FROM connections WHERE id = NEW.connection_id;
      IF NOT FOUND THEN
        RETURN NULL;
      END IF;
      PERFORM svc_webhook_event('connection.cool_down_started', c.namespace, c.labels,
        jsonb_build_object('connection_id', c.id, 'namespace', c.namespace, 'connector_id', c.connector_id,
          'until', to_char(NEW.cool_down_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));
      RETURN NULL;
    END $$`)
  yield* sql`
    CREATE TRIGGER connection_controls_webhook_events AFTER INSERT OR UPDATE ON connection_controls
    FOR EACH ROW EXECUTE FUNCTION svc_webhook_cool_down_events()`

  // A task's end; its namespace is the one of the connection or connector it works on.
  yield* sql.unsafe(`
    CREATE FUNCTION svc_webhook_task_events() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      s record;
      data jsonb;
    BEGIN
      IF OLD.state <> 'active' OR NEW.state NOT IN ('completed', 'failed') THEN
        RETURN NULL;
      END IF;
      SELECT namespace, labels, connector_id, id AS connection_id INTO s FROM connections WHERE id = NEW.subject_id;
      IF NOT FOUND THEN
        SELECT namespace, labels, id AS connector_id, NULL::text AS connection_id INTO s
        FROM connectors WHERE id = NEW.subject_id;
        IF NOT FOUND THEN
          RETURN NULL;
        END IF;
      END IF;
      data := jsonb_build_object('task_id', NEW.id, 'task_type', NEW.type, 'namespace', s.namespace,
        'connector_id', s.connector_id);
      IF s.connection_id IS NOT NULL THEN
        data := data || jsonb_build_object('connection_id', s.connection_id);
      END IF;
      PERFORM svc_webhook_event('task.' || NEW.state, s.namespace, s.labels, data);
      RETURN NULL;
    END $$`)
  yield* sql`
    CREATE TRIGGER tasks_webhook_events AFTER UPDATE ON tasks
    FOR EACH ROW EXECUTE FUNCTION svc_webhook_task_events()`
})
