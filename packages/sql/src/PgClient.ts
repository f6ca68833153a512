/**
 * Production `SqlClient` over PostgreSQL (@effect/sql-pg, pooled), with the same name
 * transforms and JSON handling as the PGlite client.
 */
import { PgClient as SqlPg } from "@effect/sql-pg"
import { Effect, type Layer, Redacted } from "effect"
import type { SqlClient } from "effect/sql"
import { ConnectionError, SqlError } from "effect/sql/SqlError"
import * as NameTransforms from "./NameTransforms.ts"

/** Options of the PostgreSQL client; transforms default to {@link NameTransforms}. */
export interface PgClientOptions {
  /** `postgres://user:password@host:port/database?...` */
  readonly url: Redacted.Redacted<string> | string
  /** Largest number of pooled connections. Default 10. */
  readonly poolSize?: number | undefined
  readonly minConnections?: number | undefined
  readonly applicationName?: string | undefined
  /**
   * TLS to the server. Absent: as the URL's `sslmode` says. `true`: required, the certificate
   * verified (chain and host name) against Node's CA store. An object: required and verified
   * against `ca` (PEM), with a client certificate when `cert` and `key` are given.
   */
  readonly ssl?: boolean | PgTls | undefined
  /**
   * Named prepared statements, cached per connection (default `true`). Turn off behind a
   * transaction-mode pooler (pgbouncer): every statement then uses the unnamed statement, which
   * lives only until the next one on the same server connection.
   */
  readonly prepare?: boolean | undefined
  readonly transformQueryNames?: ((name: string) => string) | undefined
  readonly transformResultNames?: ((name: string) => string) | undefined
}

/** PEM contents of a private CA and, optionally, a client certificate and its key. */
export interface PgTls {
  readonly ca: string | Uint8Array
  readonly cert?: string | Uint8Array | undefined
  readonly key?: string | Uint8Array | undefined
}

const tlsOptions = (ssl: PgClientOptions["ssl"]): SqlPg.PgPoolConfig["ssl"] =>
  ssl === undefined || typeof ssl === "boolean"
    ? ssl
    : {
        ca: toPem(ssl.ca),
        ...(ssl.cert === undefined ? {} : { cert: toPem(ssl.cert) }),
        ...(ssl.key === undefined ? {} : { key: toPem(ssl.key) })
      }

const toPem = (value: string | Uint8Array): string =>
  typeof value === "string" ? value : new TextDecoder().decode(value)

const config = (options: PgClientOptions): SqlPg.PgPoolConfig => ({
  url: typeof options.url === "string" ? Redacted.make(options.url) : options.url,
  maxConnections: options.poolSize ?? 10,
  minConnections: options.minConnections,
  applicationName: options.applicationName ?? "svc",
  ssl: tlsOptions(options.ssl),
  prepare: options.prepare ?? true,
  transformQueryNames: options.transformQueryNames ?? NameTransforms.queryNames,
  transformResultNames: options.transformResultNames ?? NameTransforms.resultNames,
  transformJson: false
})

/** The innermost message of an error's cause chain (the driver's own reason). */
const rootReason = (error: unknown): string => {
  let current: unknown = error
  let reason = ""
  for (let depth = 0; depth < 10 && current instanceof Error; depth++) {
    if (current.message !== "") reason = current.message
    current = current.cause
  }
  return reason === "" ? "unknown reason" : reason
}

/** The first `code` of Node's TLS certificate checks found along an error's cause chain. */
const certificateCode = (error: unknown): string | undefined => {
  let current: unknown = error
  for (let depth = 0; depth < 10 && current instanceof Error; depth++) {
    const code = "code" in current ? current.code : undefined
    if (typeof code === "string" && /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)/.test(code)) return code
    current = current.cause
  }
  return undefined
}

/**
 * What a failed connect says: which server and database (from the URL, never its password) and
 * the driver's reason, with any occurrence of the password masked; a certificate the TLS check
 * refused is named as such.
 */
export const connectFailureMessage = (url: string, error: unknown): string => {
  let where = "the configured URL"
  let password = ""
  try {
    const parsed = new URL(url)
    password = decodeURIComponent(parsed.password)
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, "")) || "(default)"
    where = `${parsed.hostname || "localhost"}:${parsed.port || "5432"}, database "${database}"`
  } catch {
    // an unparsable URL: say nothing of it, it may hold the password
  }
  const code = certificateCode(error)
  const reason =
    code === undefined
      ? rootReason(error)
      : `TLS certificate rejected (${code}: ${rootReason(error)}); the server's certificate must be signed by the configured CA (database.ssl.ca, else Node's CA store) and name the host`
  const masked = password === "" ? reason : reason.replaceAll(password, "***")
  return `cannot connect to PostgreSQL at ${where}: ${masked}`
}

/**
 * Layer providing `SqlClient` (driver `"pg"`) and @effect/sql-pg's `PgClient`; it connects once
 * while building, failing with {@link connectFailureMessage} when the server cannot be reached.
 */
export const layer = (options: PgClientOptions): Layer.Layer<SqlPg.PgClient | SqlClient.SqlClient, SqlError> => {
  const url = typeof options.url === "string" ? options.url : Redacted.value(options.url)
  return SqlPg.layerFrom(
    // @effect/sql-pg 4.0.5 predates `SqlClient.driver`; name it so storages can tell the drivers apart.
    Effect.map(SqlPg.make(config(options)), (client) =>
      client.driver === undefined ? Object.assign(client, { driver: "pg" }) : client
    ).pipe(
      // Connect once now, so an unreachable server fails startup saying which one, not a later query.
      Effect.tap((client) => client`SELECT 1`),
      Effect.mapError(
        (error) =>
          new SqlError({
            reason: new ConnectionError({
              cause: error,
              message: connectFailureMessage(url, error),
              operation: "connect"
            })
          })
      )
    )
  )
}
