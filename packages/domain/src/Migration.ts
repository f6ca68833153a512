/**
 * Version migration of a connection (spec 2.10, 4.3; API-CONVENTIONS "Errors", "Tasks and
 * notifications"): `POST /api/v1/connections/{id}/_migrate_version` takes and answers snake_case
 * fields and starts a durable task. Pure declarations.
 */
import { Schema } from "effect"

/** Longest `timeout_seconds` accepted (one day), as for the lifecycle tasks. */
export const maxMigrationTimeoutSeconds = 86_400

/** How long a migration lock outlives its task's deadline: the workflow frees it first unless its worker is lost. */
export const migrationLockGraceMs = 60_000

/** The longest hold of a migration lock: the longest task timeout plus the grace. */
export const maxMigrationLockTtlMs = maxMigrationTimeoutSeconds * 1000 + migrationLockGraceMs

/** `timeout_seconds` when the body has none (spec 8.1's lifecycle default). */
export const defaultMigrationTimeoutSeconds = 600

/**
 * `POST /api/v1/connections/{id}/_migrate_version`. `timeout_seconds` is checked by the handler
 * (an integer from 1 to 86400, else 400 `invalid_timeout`); `connector_id`, when given, must be
 * the connection's connector (else 400 `migration_wrong_connector`).
 */
export const MigrateVersion = Schema.Struct({
  target_version: Schema.Int.annotate({ description: "The connector version to move the connection to." }),
  timeout_seconds: Schema.optionalKey(
    Schema.Finite.annotate({
      description: `Time for the whole migration, 1 to ${maxMigrationTimeoutSeconds} (default ${defaultMigrationTimeoutSeconds}); anything else is 400 invalid_timeout.`
    })
  ),
  connector_id: Schema.optionalKey(
    Schema.String.annotate({
      description:
        "The connector the target version belongs to; refused (migration_wrong_connector) unless it is the connection's."
    })
  )
}).annotate({ identifier: "MigrateVersion" })
export type MigrateVersion = typeof MigrateVersion.Type

/** The 202 answer of `_migrate_version` (spec 4.3). */
export const MigrationTaskHandle = Schema.Struct({
  task_id: Schema.String,
  connection_id: Schema.String,
  source_version: Schema.Int,
  target_version: Schema.Int
}).annotate({ identifier: "MigrationTaskHandle" })
export type MigrationTaskHandle = typeof MigrationTaskHandle.Type

/** The stable codes of the migration rejections (API-CONVENTIONS "Errors"). */
export const MigrationRejection = {
  noop: "migration_noop",
  wrongConnector: "migration_wrong_connector",
  notMigratable: "migration_target_not_migratable",
  invalidTimeout: "invalid_timeout",
  inProgress: "migration_in_progress"
} as const

/** Whether `timeout_seconds` is acceptable: an integer from 1 to {@link maxMigrationTimeoutSeconds}. */
export const validMigrationTimeout = (seconds: number): boolean =>
  Number.isInteger(seconds) && seconds >= 1 && seconds <= maxMigrationTimeoutSeconds

/** One hook of a migration path: the version whose `up` or `down` hook runs. */
export interface MigrationStep {
  readonly version: number
  readonly direction: "up" | "down"
}

/**
 * spec 4.3 rule 2: the hooks a migration from `source` to `target` crosses, in order. Upward
 * (v1 → v3): `v2.up`, `v3.up`; downward (v3 → v1): `v3.down`, `v2.down`.
 */
export const migrationPath = (source: number, target: number): ReadonlyArray<MigrationStep> => {
  const steps: Array<MigrationStep> = []
  if (target > source) for (let v = source + 1; v <= target; v++) steps.push({ version: v, direction: "up" })
  else for (let v = source; v > target; v--) steps.push({ version: v, direction: "down" })
  return steps
}
