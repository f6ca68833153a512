/**
 * Schema migrations of the main and the app-metrics databases (effect/sql `Migrator`, statically
 * imported migration files). Both histories can live in one database: they use separate tables
 * (`schema_migrations`, `app_metrics_schema_migrations`) and disjoint table names.
 */
import { Effect, Layer } from "effect"
import { Migrator, type SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import main0001 from "./migrations/main/0001_initial.ts"
import main0002 from "./migrations/main/0002_resources.ts"
import main0003 from "./migrations/main/0003_secrets_and_probes.ts"
import main0004 from "./migrations/main/0004_notifications.ts"
import main0005 from "./migrations/main/0005_oauth2.ts"
import main0006 from "./migrations/main/0006_connection_controls.ts"
import main0007 from "./migrations/main/0007_tasks.ts"
import main0008 from "./migrations/main/0008_active_tasks_by_subject.ts"
import main0009 from "./migrations/main/0009_webhooks.ts"
import main0010 from "./migrations/main/0010_webhook_notices.ts"
import metrics0001 from "./migrations/metrics/0001_request_events.ts"
import metrics0002 from "./migrations/metrics/0002_request_event_indexes.ts"
import metrics0003 from "./migrations/metrics/0003_resource_snapshots.ts"
import metrics0004 from "./migrations/metrics/0004_request_event_rollups.ts"
import metrics0005 from "./migrations/metrics/0005_request_event_write_indexes.ts"

/** Migrations table of the main database. */
export const mainTable = "schema_migrations"
/** Migrations table of the app-metrics database (spec 8.2). */
export const appMetricsTable = "app_metrics_schema_migrations"

/** Main-database migrations, keyed `<id>_<name>`. */
export const mainLoader: Migrator.Loader = Migrator.fromRecord({
  "0001_initial": main0001,
  "0002_resources": main0002,
  "0003_secrets_and_probes": main0003,
  "0004_notifications": main0004,
  "0005_oauth2": main0005,
  "0006_connection_controls": main0006,
  "0007_tasks": main0007,
  "0008_active_tasks_by_subject": main0008,
  "0009_webhooks": main0009,
  "0010_webhook_notices": main0010
})

/** App-metrics migrations, keyed `<id>_<name>`. */
export const appMetricsLoader: Migrator.Loader = Migrator.fromRecord({
  "0001_request_events": metrics0001,
  "0002_request_event_indexes": metrics0002,
  "0003_resource_snapshots": metrics0003,
  "0004_request_event_rollups": metrics0004,
  "0005_request_event_write_indexes": metrics0005
})

const run = Migrator.make({})

/** The migrations applied by one run, `[id, name]`; empty when the schema is current. */
export type Applied = ReadonlyArray<readonly [id: number, name: string]>

/** Applies pending main migrations in one transaction; concurrent runs serialise on the table lock. */
export const migrateMain: Effect.Effect<Applied, Migrator.MigrationError | SqlError, SqlClient.SqlClient> = run({
  loader: mainLoader,
  table: mainTable
})

/** Applies pending app-metrics migrations (spec 8.2) in one transaction. */
export const migrateAppMetrics: Effect.Effect<Applied, Migrator.MigrationError | SqlError, SqlClient.SqlClient> = run({
  loader: appMetricsLoader,
  table: appMetricsTable
})

/** Runs `migrateMain` when built. */
export const layerMain: Layer.Layer<never, Migrator.MigrationError | SqlError, SqlClient.SqlClient> =
  Layer.effectDiscard(migrateMain)

/** Runs `migrateAppMetrics` when built. */
export const layerAppMetrics: Layer.Layer<never, Migrator.MigrationError | SqlError, SqlClient.SqlClient> =
  Layer.effectDiscard(migrateAppMetrics)

/**
 * Key of the session-level advisory lock held while migrations are applied on PostgreSQL (one
 * constant of svc's own; effect/cluster's shard locks use the two-key form, a separate space).
 */
export const migrationLockKey = 7_365_727_301_002

/**
 * Runs `migrations` holding the migration lock on a session reserved from `sql`, which must be a
 * direct connection (not a transaction-mode pooler): concurrent runs wait for the one applying,
 * then find the schema current. `onWait` runs once when another run holds the lock.
 */
export const withMigrationLock = <A, E, R>(
  sql: SqlClient.SqlClient,
  onWait: Effect.Effect<void>,
  migrations: Effect.Effect<A, E, R>
): Effect.Effect<A, E | SqlError, R> =>
  Effect.scoped(
    Effect.gen(function* () {
      const session = yield* sql.reserve
      const tryLock = session.execute(`SELECT pg_try_advisory_lock(${migrationLockKey}) AS locked`, [], undefined)
      const acquire = Effect.flatMap(tryLock, (rows) =>
        rows[0]?.locked === true
          ? Effect.void
          : Effect.andThen(onWait, session.execute(`SELECT pg_advisory_lock(${migrationLockKey})`, [], undefined))
      )
      yield* Effect.acquireRelease(acquire, () =>
        Effect.ignore(session.execute(`SELECT pg_advisory_unlock(${migrationLockKey})`, [], undefined))
      )
      return yield* migrations
    })
  )
