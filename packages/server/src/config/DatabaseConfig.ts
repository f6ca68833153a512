/** The `database` block (docs/configuration.md): embedded PGlite, or PostgreSQL by URL or parts; TLS files. */
import * as path from "node:path"
import type { DatabaseConfig } from "./ConfigSchema.ts"
import type { ResolvedDatabase, ResolvedDatabaseTls } from "./SvcConfig.ts"

/** `database.ssl`: `true` or `{ca, cert?, key?}` requires verified TLS; absent or `false` follows the URL's `sslmode`. */
const resolveDatabaseTls = (
  ssl: DatabaseConfig["ssl"],
  at: string,
  base: string,
  problems: Array<string>
): ResolvedDatabaseTls => {
  if (ssl === undefined || ssl === false) return { mode: "url" }
  if (ssl === true) return { mode: "verified" }
  if ((ssl.cert === undefined) !== (ssl.key === undefined)) {
    problems.push(`${at}.ssl: \`cert\` and \`key\` go together (a client certificate needs its key)`)
  }
  return {
    mode: "verified",
    caPath: path.resolve(base, ssl.ca),
    ...(ssl.cert === undefined ? {} : { certPath: path.resolve(base, ssl.cert) }),
    ...(ssl.key === undefined ? {} : { keyPath: path.resolve(base, ssl.key) })
  }
}

export const resolveDatabase = (
  db: DatabaseConfig,
  at: string,
  dirs: { readonly base: string; readonly dataDir: string },
  problems: Array<string>
): ResolvedDatabase => {
  if (db.provider === "pglite") {
    if (db.direct_url !== undefined) problems.push(`${at}.direct_url: only for provider postgres`)
    return { provider: "pglite", path: path.resolve(dirs.dataDir, db.path ?? "db") }
  }
  const common = {
    provider: "postgres" as const,
    directUrl: db.direct_url,
    maxConnections: db.max_connections ?? 10,
    ssl: resolveDatabaseTls(db.ssl, at, dirs.base, problems),
    preparedStatements: db.prepared_statements ?? true
  }
  if (db.url !== undefined) return { ...common, url: db.url }
  if (db.addresses !== undefined && db.addresses.length > 1) {
    problems.push(`${at}.addresses: exactly one host:port is supported; use \`url\` for anything else`)
  }
  if (db.addresses === undefined || db.addresses.length === 0 || db.database === undefined) {
    problems.push(`${at}: provider postgres needs \`url\`, or \`addresses\` and \`database\``)
    return { ...common, url: "" }
  }
  const auth =
    db.user === undefined
      ? ""
      : `${encodeURIComponent(db.user)}${db.password === undefined ? "" : `:${encodeURIComponent(db.password)}`}@`
  const url = `postgres://${auth}${db.addresses.join(",")}/${encodeURIComponent(db.database)}`
  return { ...common, url }
}
