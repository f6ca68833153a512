/**
 * TLS to PostgreSQL (issue: production infrastructure, item 3): a private PostgreSQL 15 cluster
 * (test/support/PrivatePostgres.ts) that accepts TCP connections over TLS only, with a server
 * certificate signed by a CA this test generates. svc migrates and serves with the certificate
 * verified against `database.ssl.ca`, and with `sslmode=verify-full` in the URL (the CA given to
 * Node by `NODE_EXTRA_CA_CERTS`). A wrong CA fails the start: exit 1 and one line naming the
 * database and the certificate problem, no stack trace, no password. Loopback only, bounded in
 * time; the cluster and every process are stopped.
 */
import { randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { caller, expectStatus, type NamespaceBody } from "../support/Api.ts"
import { opsConfigLines, opsToken, writeOpsKeys } from "../support/OpsActor.ts"
import { type PrivatePostgres, startPrivatePostgres } from "../support/PrivatePostgres.ts"
import { freePorts, portEnv, type RunningSvc, runSvc, startSvc, tempDir, waitForHttp } from "../support/SvcProcess.ts"

let pg: PrivatePostgres | undefined
let dir = ""
let secret: Uint8Array = new Uint8Array()
const running: Array<RunningSvc> = []
/** A password in the URL: trust authentication never asks for it, and no output may show it. */
const password = "tls-s3cret-pw"

const writeConfig = (database: ReadonlyArray<string>) =>
  fs.writeFile(
    path.join(dir, "svc.yaml"),
    [
      "database:",
      "  provider: postgres",
      ...database.map((line) => `  ${line}`),
      `counter_store: { provider: redis, url: "redis://127.0.0.1:6379", key_prefix: "svc-e2e-${randomUUID()}:" }`,
      ...opsConfigLines
    ].join("\n")
  )

const url = (query?: string) => pg!.url("svc", query).replace("postgres@", `postgres:${password}@`)

/** The one line a failed start prints, after checking it is the only output and shows no secret. */
const oneLine = (output: string) => {
  const lines = output.split("\n").filter((line) => line.trim() !== "")
  expect(lines, output).toHaveLength(1)
  expect(output).not.toContain(password)
  expect(output).not.toMatch(/^\s+at /m)
  return lines[0]!
}

beforeAll(async () => {
  pg = await startPrivatePostgres()
  await pg.psql("postgres", "CREATE DATABASE svc")
  dir = await tempDir("svc-e2e-pgtls-")
  secret = await writeOpsKeys(dir)
}, 120_000)

afterAll(async () => {
  await Promise.all(running.map((p) => p.stop("SIGKILL")))
  await pg?.stop()
  if (dir !== "") await fs.rm(dir, { recursive: true, force: true })
}, 60_000)

describe("TLS to PostgreSQL, verified", () => {
  it("database.ssl.ca: svc migrate, then serve answers CRUD over the verified connection", async () => {
    await writeConfig([`url: "${url()}"`, `ssl: { ca: "${pg!.caPath}" }`])
    const migrated = await runSvc(["migrate"], { cwd: dir, timeoutMs: 90_000 })
    expect(migrated.code, migrated.output).toBe(0)
    expect(migrated.output).toContain("main: applied 0001_initial")
    const ports = await freePorts()
    const svc = startSvc(["serve", "--service", "api", "--service", "worker"], { cwd: dir, env: portEnv(ports) })
    running.push(svc)
    await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, svc, 60_000)
    const call = caller(ports, await opsToken(secret))
    const created = expectStatus<NamespaceBody>(
      await call("POST", "/api/v1/namespaces", { body: { path: "root.tls" } }),
      201
    )
    expect(expectStatus<NamespaceBody>(await call("GET", "/api/v1/namespaces/root.tls"), 200).id).toBe(created.id)
    // The server refuses TCP without TLS (hostnossl reject), so every session svc holds is encrypted.
    const sessions = await pg!.psql(
      "postgres",
      "SELECT count(*) FILTER (WHERE s.ssl), count(*) FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.datname = 'svc' AND a.application_name LIKE 'svc%'"
    )
    const [encrypted, total] = sessions.split("|").map(Number)
    expect(total).toBeGreaterThan(0)
    expect(encrypted).toBe(total)
    expect(await svc.stop()).toBe(0)
  }, 150_000)

  it("sslmode=verify-full in the URL, the CA trusted through NODE_EXTRA_CA_CERTS", async () => {
    await writeConfig([`url: "${url("sslmode=verify-full")}"`])
    const migrated = await runSvc(["migrate"], {
      cwd: dir,
      env: { NODE_EXTRA_CA_CERTS: pg!.caPath },
      timeoutMs: 60_000
    })
    expect(migrated.code, migrated.output).toBe(0)
    expect(migrated.output).toContain("migrations: already up to date")
  }, 90_000)

  it("a wrong CA in database.ssl.ca fails the start with one line naming the database and the certificate problem", async () => {
    await writeConfig([`url: "${url()}"`, `ssl: { ca: "${pg!.wrongCaPath}" }`])
    const ports = await freePorts()
    const svc = startSvc(["serve", "--service", "api"], { cwd: dir, env: portEnv(ports) })
    running.push(svc)
    const timer = setTimeout(() => svc.child.kill("SIGKILL"), 60_000)
    const code = await svc.exited
    clearTimeout(timer)
    expect(code, svc.output()).toBe(1)
    const line = oneLine(svc.output())
    expect(line).toContain(`svc: cannot connect to PostgreSQL at 127.0.0.1:${pg!.port}, database "svc": `)
    expect(line).toContain("TLS certificate rejected (SELF_SIGNED_CERT_IN_CHAIN")
  }, 90_000)

  it("a wrong CA with sslmode=verify-full fails `svc migrate` the same way", async () => {
    await writeConfig([`url: "${url("sslmode=verify-full")}"`])
    const migrated = await runSvc(["migrate"], {
      cwd: dir,
      env: { NODE_EXTRA_CA_CERTS: pg!.wrongCaPath },
      timeoutMs: 60_000
    })
    expect(migrated.code).toBe(1)
    const line = oneLine(migrated.output)
    expect(line).toContain(`svc: cannot connect to PostgreSQL at 127.0.0.1:${pg!.port}, database "svc": `)
    expect(line).toContain("TLS certificate rejected")
  }, 90_000)
})
