/**
 * Start-up checks of the stores: that a database answers, and that its schema is not behind this
 * build's migrations (`svc serve` without `--migrate` refuses to run on an old schema).
 */
import { Effect, Schema } from "effect"
import type { Migrator, SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import * as Migrations from "./Migrations.ts"

/** The schema is behind this build and `serve` was not asked to migrate. */
export class SchemaBehind extends Schema.TaggedError<SchemaBehind>()("SchemaBehind", { database: Schema.String }) {
  override get message() {
    return `the ${this.database} database schema is behind this build: run \`svc migrate\` (or \`svc serve --migrate\`)`
  }
}

/** One round trip that succeeds when the database answers (readiness probes, start-up). */
export const ping = (sql: SqlClient.SqlClient): Effect.Effect<void, SqlError> => Effect.asVoid(sql`SELECT 1`)

const latestApplied = (sql: SqlClient.SqlClient, table: string) =>
  sql<{ readonly latest: number | null }>`SELECT max(migration_id) AS latest FROM ${sql(table)}`.pipe(
    Effect.map((rows) => rows[0]?.latest ?? 0),
    Effect.catch(() => Effect.succeed(0))
  )

const latestKnown = (loader: Migrator.Loader) =>
  Effect.map(Effect.orDie(loader), (all) => Math.max(0, ...all.map(([id]) => id)))

/** Fails with `SchemaBehind` when either database lacks a migration this build knows. */
export const checkSchema = (
  main: SqlClient.SqlClient,
  appMetrics: SqlClient.SqlClient
): Effect.Effect<void, SchemaBehind | SqlError> =>
  Effect.gen(function* () {
    yield* ping(main)
    yield* ping(appMetrics)
    if ((yield* latestApplied(main, Migrations.mainTable)) < (yield* latestKnown(Migrations.mainLoader))) {
      return yield* new SchemaBehind({ database: "main" })
    }
    if (
      (yield* latestApplied(appMetrics, Migrations.appMetricsTable)) < (yield* latestKnown(Migrations.appMetricsLoader))
    ) {
      return yield* new SchemaBehind({ database: "appMetrics" })
    }
  })
