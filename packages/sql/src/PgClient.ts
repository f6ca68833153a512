/**
 * Production `SqlClient` over PostgreSQL (@effect/sql-pg, pooled), with the same name
 * transforms and JSON handling as the PGlite client.
 */
import { PgClient as SqlPg } from "@effect/sql-pg"
import { Effect, type Layer, Redacted } from "effect"
import type { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import * as NameTransforms from "./NameTransforms.ts"

/** Options of the PostgreSQL client; transforms default to {@link NameTransforms}. */
export interface PgClientOptions {
  /** `postgres://user:password@host:port/database?...` */
  readonly url: Redacted.Redacted<string> | string
  /** Largest number of pooled connections. Default 10. */
  readonly poolSize?: number | undefined
  readonly minConnections?: number | undefined
  readonly applicationName?: string | undefined
  /** Require TLS to the server (certificates verified by Node's defaults). */
  readonly ssl?: boolean | undefined
  readonly transformQueryNames?: ((name: string) => string) | undefined
  readonly transformResultNames?: ((name: string) => string) | undefined
}

const config = (options: PgClientOptions): SqlPg.PgPoolConfig => ({
  url: typeof options.url === "string" ? Redacted.make(options.url) : options.url,
  maxConnections: options.poolSize ?? 10,
  minConnections: options.minConnections,
  applicationName: options.applicationName ?? "svc",
  ssl: options.ssl,
  transformQueryNames: options.transformQueryNames ?? NameTransforms.queryNames,
  transformResultNames: options.transformResultNames ?? NameTransforms.resultNames,
  transformJson: false
})

/** Layer providing `SqlClient` (driver `"pg"`) and @effect/sql-pg's `PgClient`. */
export const layer = (options: PgClientOptions): Layer.Layer<SqlPg.PgClient | SqlClient.SqlClient, SqlError> =>
  SqlPg.layerFrom(
    // @effect/sql-pg 4.0.5 predates `SqlClient.driver`; name it so storages can tell the drivers apart.
    Effect.map(SqlPg.make(config(options)), (client) =>
      client.driver === undefined ? Object.assign(client, { driver: "pg" }) : client
    )
  )
