/**
 * The SQL clients of the process, chosen by configuration: the main database (`SqlClient`), the
 * app-metrics database (`AppMetricsSql`, spec 8.2), which may be the same client, and the main
 * database's session client (`DirectSql`), which bypasses a transaction-mode pooler.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { Scope } from "effect"
import * as PgClient from "@svc/sql/PgClient"
import { readFile, type UnreadableFile } from "../config/Files.ts"
import type { ResolvedDatabase } from "../config/SvcConfig.ts"

/** The client of the app-metrics database (request events, resource samples). */
export class AppMetricsSql extends Context.Service<AppMetricsSql, SqlClient.SqlClient>()("svc/server/AppMetricsSql") {}

/**
 * The main database over a session of its own (`database.direct_url`, else the main client):
 * what a transaction-mode pooler cannot carry — the migration lock and the cluster's shard locks
 * (advisory locks and session settings).
 */
export class DirectSql extends Context.Service<DirectSql, SqlClient.SqlClient>()("svc/server/DirectSql") {}

/** Connections of a direct (session) pool: one lock session, one transaction, one spare. */
export const directPoolSize = 3

type Postgres = Extract<ResolvedDatabase, { readonly provider: "postgres" }>

/** The TLS options of a PostgreSQL client, with the configured PEM files read. */
const tls = (db: Postgres): Effect.Effect<PgClient.PgClientOptions["ssl"], UnreadableFile> => {
  const ssl = db.ssl
  if (ssl.mode === "url") return Effect.succeed(undefined)
  if (ssl.caPath === undefined) return Effect.succeed(true)
  const { caPath, certPath, keyPath } = ssl
  return Effect.all({
    ca: readFile("PostgreSQL CA certificate (database.ssl.ca)", caPath),
    cert: certPath === undefined ? Effect.undefined : readFile("PostgreSQL client certificate", certPath),
    key: keyPath === undefined ? Effect.undefined : readFile("PostgreSQL client key", keyPath)
  })
}

const pgLayer = (db: Postgres, role: "pooled" | "direct") =>
  Layer.unwrap(
    Effect.map(tls(db), (ssl) =>
      PgClient.layer(
        role === "pooled"
          ? { url: db.url, poolSize: db.maxConnections, ssl, prepare: db.preparedStatements }
          : {
              url: db.directUrl ?? db.url,
              poolSize: Math.min(directPoolSize, db.maxConnections),
              ssl,
              // A direct connection is a session of its own, so named statements survive it.
              prepare: db.directUrl === undefined ? db.preparedStatements : true,
              applicationName: "svc-direct"
            }
      )
    )
  )

/**
 * A `SqlClient` layer for one configured database. PGlite runs in a worker thread of its own, so
 * its statements (the request-event inserts above all) never block the event loop (issue 16); its
 * client is loaded only when a database is PGlite (a process on PostgreSQL never loads PGlite).
 */
export const clientLayer = (db: ResolvedDatabase): Layer.Layer<SqlClient.SqlClient, SqlError | UnreadableFile> =>
  db.provider === "pglite"
    ? Layer.unwrap(
        Effect.promise(() => import("@svc/sql/PgliteClient")).pipe(
          Effect.map((PgliteClient) => PgliteClient.layerWorker({ dataDir: db.path }))
        )
      )
    : pgLayer(db, "pooled")

/**
 * The session client of `db`: a small pool on `direct_url` when configured; otherwise `pooled`
 * itself (PGlite, or PostgreSQL without a pooler in front).
 */
export const directClient = (
  db: ResolvedDatabase,
  pooled: SqlClient.SqlClient
): Effect.Effect<SqlClient.SqlClient, SqlError | UnreadableFile, Scope.Scope> =>
  db.provider === "postgres" && db.directUrl !== undefined
    ? Effect.map(Layer.build(pgLayer(db, "direct")), (context) => Context.get(context, SqlClient.SqlClient))
    : Effect.succeed(pooled)

/** Main `SqlClient`, `DirectSql` and `AppMetricsSql` (sharing the main client when configured as `main`). */
export const layer = (
  main: ResolvedDatabase,
  appMetrics: ResolvedDatabase | "main"
): Layer.Layer<SqlClient.SqlClient | AppMetricsSql | DirectSql, SqlError | UnreadableFile> => {
  const mainLayer = clientLayer(main)
  const directLayer = Layer.effect(
    DirectSql,
    Effect.flatMap(SqlClient.SqlClient, (pooled) => directClient(main, pooled))
  )
  const metricsLayer =
    appMetrics === "main"
      ? Layer.effect(AppMetricsSql, SqlClient.SqlClient)
      : Layer.effect(
          AppMetricsSql,
          Effect.map(Layer.build(clientLayer(appMetrics)), (context) => Context.get(context, SqlClient.SqlClient))
        )
  return Layer.provideMerge(Layer.merge(metricsLayer, directLayer), mainLayer)
}
