import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as Migrations from "./Migrations.ts"
import { requestEventColumns } from "./RequestEventRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"

for (const [backend, db] of TestDatabase.backends) {
  layer(db, { timeout: "60 seconds" })(`Migrations (${backend})`, (it) => {
    it.effect("main and app-metrics migrations apply once each in one shared database", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        assert.deepStrictEqual(yield* Migrations.migrateMain, [
          [1, "initial"],
          [2, "resources"],
          [3, "secrets_and_probes"],
          [4, "notifications"],
          [5, "oauth2"],
          [6, "connection_controls"],
          [7, "tasks"],
          [8, "active_tasks_by_subject"],
          [9, "webhooks"],
          [10, "webhook_notices"]
        ])
        assert.deepStrictEqual(yield* Migrations.migrateAppMetrics, [
          [1, "request_events"],
          [2, "request_event_indexes"],
          [3, "resource_snapshots"],
          [4, "request_event_rollups"],
          [5, "request_event_write_indexes"]
        ])
        assert.deepStrictEqual(yield* Migrations.migrateMain, [])
        assert.deepStrictEqual(yield* Migrations.migrateAppMetrics, [])

        const history = (table: string) =>
          sql`SELECT migration_id, name FROM ${sql(table)} ORDER BY migration_id`.withoutTransform
        assert.deepStrictEqual(yield* history("schema_migrations"), [
          { migration_id: 1, name: "initial" },
          { migration_id: 2, name: "resources" },
          { migration_id: 3, name: "secrets_and_probes" },
          { migration_id: 4, name: "notifications" },
          { migration_id: 5, name: "oauth2" },
          { migration_id: 6, name: "connection_controls" },
          { migration_id: 7, name: "tasks" },
          { migration_id: 8, name: "active_tasks_by_subject" },
          { migration_id: 9, name: "webhooks" },
          { migration_id: 10, name: "webhook_notices" }
        ])
        assert.deepStrictEqual(yield* history("app_metrics_schema_migrations"), [
          { migration_id: 1, name: "request_events" },
          { migration_id: 2, name: "request_event_indexes" },
          { migration_id: 3, name: "resource_snapshots" },
          { migration_id: 4, name: "request_event_rollups" },
          { migration_id: 5, name: "request_event_write_indexes" }
        ])

        const tables = yield* sql<{ tableName: string }>`
          SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`
        assert.deepStrictEqual(
          tables.map((t) => t.tableName),
          [
            "actors",
            "app_metrics_schema_migrations",
            "connection_controls",
            "connections",
            "connector_versions",
            "connectors",
            "data_keys",
            "keys",
            "label_propagations",
            "maintenance_runs",
            "namespaces",
            "notification_views",
            "notifications",
            "probe_states",
            "rate_limits",
            "reencryptions",
            "request_event_rollups",
            "request_events",
            "resource_snapshots",
            "schema_migrations",
            "tasks",
            "webhook_deliveries",
            "webhook_events",
            "webhooks"
          ]
        )
      })
    )

    it.effect("creates the root namespace, the resource indexes and the request-event columns and indexes", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const namespaces = yield* sql`SELECT path, name, labels, deleted_at FROM namespaces`
        assert.deepStrictEqual(namespaces, [
          {
            path: "root",
            name: "root",
            labels: { "svc/ns/-/id": "root", "svc/ns/-/name": "root", "svc/ns/-/ns": "root" },
            deletedAt: null
          }
        ])

        const columns = yield* sql<{ columnName: string }>`
          SELECT column_name FROM information_schema.columns WHERE table_name = 'request_events' ORDER BY ordinal_position`
        assert.deepStrictEqual(
          columns.map((c) => c.columnName),
          requestEventColumns
        )

        const indexes = yield* sql<{ indexname: string; indexdef: string }>`
          SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND indexname NOT LIKE '%_pkey' ORDER BY indexname`
        assert.deepStrictEqual(
          indexes.map((i) => i.indexname),
          [
            "actors_external_id_live",
            "actors_labels_gin",
            "actors_namespace",
            "actors_namespace_name_live",
            "connections_connector",
            "connections_created",
            "connections_labels_gin",
            "connections_namespace",
            "connections_namespace_name_live",
            "connections_token_refresh_due",
            "connector_versions_one_primary",
            "connectors_labels_gin",
            "connectors_namespace",
            "connectors_namespace_name_live",
            "keys_labels_gin",
            "keys_namespace_name_live",
            "namespaces_labels_gin",
            "namespaces_path_live",
            "namespaces_path_pattern",
            "notifications_active_created",
            "notifications_connection_key_active",
            "notifications_namespace",
            "notifications_webhook_key_active",
            "probe_states_due",
            "rate_limits_labels_gin",
            "rate_limits_namespace_name_live",
            "request_events_connection_timestamp_idx",
            // Migration 0005: the embedded PGlite keeps only the indexes its writes must pay for.
            ...(backend === "postgres"
              ? [
                  "request_events_connector_timestamp_idx",
                  "request_events_labels_gin",
                  "request_events_namespace_timestamp_idx"
                ]
              : []),
            "request_events_timestamp_id_idx",
            "resource_snapshots_kind_taken_idx",
            "tasks_active_subject",
            "tasks_one_active",
            "webhook_deliveries_due",
            "webhook_deliveries_log",
            "webhook_deliveries_once",
            "webhook_events_undispatched",
            "webhooks_labels_gin",
            "webhooks_namespace_name_live"
          ]
        )
        const def = (name: string) => indexes.find((i) => i.indexname === name)?.indexdef ?? ""
        assert.match(def("actors_external_id_live"), /UNIQUE INDEX .* \(external_id\) WHERE \(deleted_at IS NULL\)/)
        assert.match(def("actors_labels_gin"), /USING gin \(labels\)/)
        assert.match(
          def("notifications_connection_key_active"),
          /UNIQUE INDEX .* \(connection_id, key\) WHERE \(resolved_at IS NULL\)/
        )
        assert.match(
          def("notifications_webhook_key_active"),
          /UNIQUE INDEX .* \(webhook_id, key\) WHERE \(\(resolved_at IS NULL\) AND \(webhook_id IS NOT NULL\)\)/
        )
        assert.match(def("request_events_connection_timestamp_idx"), /\(connection_id, "?timestamp"?\)/)
        assert.match(def("request_events_timestamp_id_idx"), /\("?timestamp"? DESC, id DESC\)/)
        if (backend === "postgres") {
          assert.match(def("request_events_labels_gin"), /USING gin \(labels\)/)
          assert.match(
            def("request_events_namespace_timestamp_idx"),
            /\(namespace text_pattern_ops, "?timestamp"? DESC\)/
          )
        }
      })
    )
  })
}
