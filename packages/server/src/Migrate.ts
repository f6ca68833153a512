/**
 * `svc migrate`, apart from `Serve.ts`: it loads the stores and the migrations, not the services,
 * so a migration run (a Job before each rollout) starts in a fraction of `svc serve`'s time.
 */
import { Console, Effect } from "effect"
import type { ResolvedConfig } from "./config/SvcConfig.ts"
import * as Database from "./stores/Database.ts"
import * as Stores from "./stores/Stores.ts"

/** Warns when migrations and shard locks would run through a transaction-mode pooler. */
export const warnPoolerWithoutDirectUrl = (config: ResolvedConfig) =>
  config.database.provider === "postgres" &&
  !config.database.preparedStatements &&
  config.database.directUrl === undefined
    ? Effect.logWarning(
        "database.prepared_statements is false but database.direct_url is not set: migrations and the cluster's shard locks use database.url, which must then keep sessions (not a transaction-mode pooler)"
      )
    : Effect.void

/** `svc migrate`: applies pending migrations to the main and app-metrics databases and exits. */
export const runMigrations = Effect.fn("Serve.runMigrations")(function* (config: ResolvedConfig) {
  yield* warnPoolerWithoutDirectUrl(config)
  const applied = yield* Stores.migrate(
    config,
    Console.log("migrations: another process is applying migrations; waiting for it")
  ).pipe(Effect.provide(Database.layer(config.database, config.appMetricsDatabase)))
  for (const [id, name] of applied.main) yield* Console.log(`main: applied ${String(id).padStart(4, "0")}_${name}`)
  for (const [id, name] of applied.metrics)
    yield* Console.log(`appMetrics: applied ${String(id).padStart(4, "0")}_${name}`)
  if (applied.main.length + applied.metrics.length === 0) yield* Console.log("migrations: already up to date")
}, Effect.scoped)
