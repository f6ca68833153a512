/**
 * The SQL clients of the process, chosen by configuration: the main database (`SqlClient`) and
 * the app-metrics database (`AppMetricsSql`, spec 8.2), which may be the same client.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import * as PgClient from "@svc/sql/PgClient"
import * as PgliteClient from "@svc/sql/PgliteClient"
import type { ResolvedDatabase } from "../config/SvcConfig.ts"

/** The client of the app-metrics database (request events, resource samples). */
export class AppMetricsSql extends Context.Service<AppMetricsSql, SqlClient.SqlClient>()("svc/server/AppMetricsSql") {}

/**
 * A `SqlClient` layer for one configured database. PGlite runs in a worker thread of its own, so
 * its statements (the request-event inserts above all) never block the event loop (issue 16).
 */
export const clientLayer = (db: ResolvedDatabase): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  db.provider === "pglite"
    ? PgliteClient.layerWorker({ dataDir: db.path })
    : PgClient.layer({ url: db.url, poolSize: db.maxConnections, ssl: db.ssl })

/** Main `SqlClient` plus `AppMetricsSql` (sharing the main client when configured as `main`). */
export const layer = (
  main: ResolvedDatabase,
  appMetrics: ResolvedDatabase | "main"
): Layer.Layer<SqlClient.SqlClient | AppMetricsSql, SqlError> => {
  const mainLayer = clientLayer(main)
  const metricsLayer =
    appMetrics === "main"
      ? Layer.effect(AppMetricsSql, SqlClient.SqlClient)
      : Layer.effect(
          AppMetricsSql,
          Effect.map(Layer.build(clientLayer(appMetrics)), (context) => Context.get(context, SqlClient.SqlClient))
        )
  return Layer.provideMerge(metricsLayer, mainLayer)
}
