/**
 * What `svc serve` tells a newcomer once it is ready: the URL of every service and how to get an
 * admin token. The embedded default writes a fresh admin token to an owner-only file instead of
 * printing it, so no credential ends up in a terminal log.
 */
import { Console, Effect } from "effect"
import { importPKCS8, SignJWT } from "jose"
import type { ServiceId } from "@svc/domain/Auth"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { ResolvedConfig } from "./config/SvcConfig.ts"
import { version } from "./config/Version.ts"

const adminTokenTtlSeconds = 7 * 24 * 3600

const display = (file: string) => {
  const relative = path.relative(process.cwd(), file)
  return relative.startsWith("..") ? file : relative
}

/** Signs a 7-day token for the first configured actor with the development key; returns its file. */
export const writeAdminToken = Effect.fn("StartupBanner.writeAdminToken")(function* (
  config: ResolvedConfig,
  privateKeyPath: string
) {
  const actor = config.auth.actors[0]
  if (actor === undefined) return undefined
  const token = yield* Effect.promise(async () => {
    const key = await importPKCS8(await fs.readFile(privateKeyPath, "utf8"), "RS256")
    const now = Math.floor(Date.now() / 1000)
    return new SignJWT({})
      .setProtectedHeader({ alg: "RS256", typ: "JWT" })
      .setSubject(actor.external_id)
      .setIssuedAt(now)
      .setExpirationTime(now + adminTokenTtlSeconds)
      .setJti(randomUUID())
      .sign(key)
  })
  const file = path.join(config.dataDir, "admin.token")
  yield* Effect.promise(() => fs.writeFile(file, `${token}\n`, { mode: 0o600 }))
  return { file, actor: actor.external_id, privateKeyPath }
})

const urls: Record<ServiceId, (host: string, port: number) => string> = {
  api: (h, p) => `http://${h}:${p}`,
  "admin-api": (h, p) => `https://${h}:${p}`,
  public: (h, p) => `http://${h}:${p}`,
  worker: (h, p) => `http://${h}:${p}/healthz`
}

/** Prints the ready banner on stdout. */
export const printBanner = (
  config: ResolvedConfig,
  services: ReadonlyArray<ServiceId>,
  token: { readonly file: string; readonly actor: string; readonly privateKeyPath: string } | undefined,
  boundPorts: ReadonlyMap<ServiceId, number> = new Map(),
  metricsPort: number | undefined = undefined
) =>
  Effect.gen(function* () {
    const storage =
      config.database.provider === "pglite" ? `embedded database in ${display(config.database.path)}` : "PostgreSQL"
    const lines = [`svc ${version} ready (${config.source}; ${storage})`]
    for (const service of services) {
      const { host } = config.listeners[service]
      const port = boundPorts.get(service) ?? config.listeners[service].port
      const note =
        service === "admin-api" && config.adminTls.selfSigned ? "  (self-signed development certificate)" : ""
      lines.push(`  ${service.padEnd(10)} ${urls[service](host, port)}${note}`)
    }
    if (metricsPort !== undefined) {
      const { host } = config.telemetry.prometheus
      lines.push(`  ${"metrics".padEnd(10)} http://${host.includes(":") ? `[${host}]` : host}:${metricsPort}/metrics`)
    }
    if (token !== undefined) {
      const api = config.listeners.api
      const apiPort = boundPorts.get("api") ?? api.port
      lines.push(
        "",
        `An admin token for actor "${token.actor}" (valid 7 days) is in ${display(token.file)}:`,
        `  curl -H "Authorization: Bearer $(cat ${display(token.file)})" http://${api.host}:${apiPort}/api/v1/auth/whoami`,
        "Sign more tokens with the development key:",
        `  npm run cli -- sign-jwt --admin --privateKeyPath ${display(token.privateKeyPath)}`
      )
    }
    yield* Console.log(lines.join("\n"))
  })
