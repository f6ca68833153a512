/**
 * Carry-forward in the production shape, black-box (issue 3 item 4; spec 2.4 rules 3–4): api and
 * worker as separate `svc serve` processes on one fresh PostgreSQL database (Redis, HS256), parent
 * label changes reaching grandchildren through the `label_propagations` outbox and the worker,
 * the outbox surviving a stopped worker, and the consistency checker repairing drift written in SQL.
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { SignJWT } from "jose"
import { randomBytes, randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { isDeepStrictEqual } from "node:util"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { postgres, TestDatabase } from "@svc/sql/TestDatabase"
import {
  type ConnectionBody,
  caller,
  eventually,
  expectStatus,
  rand,
  type Resource,
  resources,
  type Svc
} from "../support/Api.ts"
import {
  freePorts,
  type Ports,
  portEnv,
  type RunningSvc,
  runSvc,
  startSvc,
  tempDir,
  waitForHttp
} from "../support/SvcProcess.ts"

type Labels = Record<string, string>

const secret = randomBytes(48)
const keyPrefix = `svc-e2e-${randomUUID()}:`
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let dir: string
let ports: Ports
let env: Record<string, string>
let scope: Scope.Closeable
let sql: SqlClient.SqlClient
let apiProcess: RunningSvc | undefined
let worker: RunningSvc | undefined
let stoppedWorkers = ""
let svc: Svc
let r: ReturnType<typeof resources>

const signHs256 = (sub: string, claims: Record<string, unknown> = {}) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime("1h")
    .setJti(randomUUID())
    .sign(secret)

/** The last lines of the api process's and the workers' output, for failure messages. */
const logs = () =>
  `api:\n${apiProcess?.output().slice(-3000)}\nworkers:\n${(stoppedWorkers + (worker?.output() ?? "")).slice(-4000)}`

const config = (url: string, checkInterval: string) =>
  [
    `database: { provider: postgres, url: "${url}", max_connections: 4 }`,
    `counter_store: { provider: redis, url: "redis://127.0.0.1:6379", key_prefix: "${keyPrefix}" }`,
    "encryption: { root_key: { path: root.key } }",
    "system_auth:",
    "  jwt_signing_key: { private_key: { path: hs256.secret } }",
    "  actors:",
    "    - external_id: ops",
    "      permissions: [{ namespace: 'root.**', resources: ['*'], verbs: ['*'] }]",
    `labels: { propagation_poll_interval: 1s, consistency_check_interval: ${checkInterval} }`
  ].join("\n")

const startWorker = async (configFile: string) => {
  worker = startSvc(["serve", "--config", configFile, "--service", "worker"], { cwd: dir, env })
  await waitForHttp(`http://127.0.0.1:${ports.worker}/healthz`, worker, 30_000)
}

const stopWorker = async () => {
  const code = await worker?.stop()
  stoppedWorkers += worker?.output() ?? ""
  expect(code, logs()).toBe(0)
  worker = undefined
}

const outboxFor = (parents: ReadonlyArray<string>) =>
  Effect.runPromise(
    sql<{ parentType: string; parentId: string }>`SELECT parent_type, parent_id FROM label_propagations
      WHERE parent_id IN ${sql.in(parents)} ORDER BY id`
  ).then((rows) => rows.map((row) => ({ parentType: row.parentType, parentId: row.parentId })))

const labelsInSql = (table: "keys" | "connections", id: string) =>
  Effect.runPromise(sql<{ labels: Labels }>`SELECT labels FROM ${sql(table)} WHERE id = ${id}`).then(
    (rows) => rows[0]?.labels
  )

/** Removes `drop` from the row's labels and merges `set` into them, directly in SQL. */
const corrupt = (table: "keys" | "connections", id: string, drop: ReadonlyArray<string>, set: Labels) => {
  const kept = drop.reduce((labels, key) => sql`(${labels} - CAST(${key} AS text))`, sql`labels`)
  return Effect.runPromise(
    sql`UPDATE ${sql(table)} SET labels = ${kept} || CAST(${JSON.stringify(set)} AS jsonb) WHERE id = ${id}`
  )
}

const lastCheck = () =>
  Effect.runPromise(
    sql<{ lastRunAt: Date; ageMs: number }>`SELECT last_run_at,
      CAST(EXTRACT(EPOCH FROM (now() - last_run_at)) * 1000 AS float8) AS age_ms
      FROM maintenance_runs WHERE name = 'labels.consistency_check'`
  ).then((rows) => rows[0])

const putLabel = async (segment: string, id: string, key: string, value: string) =>
  expectStatus(await svc.call("PUT", `/api/v1/${segment}/${id}/labels/${key}`, { body: { value } }), 200)

const rename = async (connectorId: string, name: string) =>
  expectStatus(await svc.call("PATCH", `/api/v1/connectors/${connectorId}`, { body: { name } }), 200)

beforeAll(async () => {
  dir = await tempDir("svc-e2e-carry-prod-")
  ports = await freePorts()
  env = portEnv(ports)
  scope = await Effect.runPromise(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(postgres, scope))
  sql = Context.get(context, SqlClient.SqlClient)
  const url = Context.get(context, TestDatabase).url ?? ""
  await fs.writeFile(path.join(dir, "hs256.secret"), secret, { mode: 0o600 })
  await fs.writeFile(path.join(dir, "root.key"), randomBytes(32).toString("base64"), { mode: 0o600 })
  await fs.writeFile(path.join(dir, "svc.yaml"), config(url, "24h"))
  await fs.writeFile(path.join(dir, "svc-checker.yaml"), config(url, "2s"))
  const migrated = await runSvc(["migrate"], { cwd: dir, env })
  expect(migrated.code, migrated.output).toBe(0)

  apiProcess = startSvc(["serve", "--service", "api", "--service", "admin-api"], { cwd: dir, env })
  await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, apiProcess, 30_000)
  const token = await signHs256("ops")
  const call = caller(ports, token)
  svc = { ports, adminToken: token, output: logs, call, sign: signHs256, stop: async () => undefined }
  r = resources(svc)

  await startWorker("svc.yaml")
  // The checker singleton runs once at first start (no previous run); after that the 24h interval keeps it idle.
  const first = await eventually(lastCheck, (row) => row !== undefined)
  expect(first, logs()).toBeDefined()
}, 90_000)

afterAll(async () => {
  await worker?.stop()
  await apiProcess?.stop()
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  if (dir !== undefined) await fs.rm(dir, { recursive: true, force: true })
}, 60_000)

describe("split api and worker processes (spec 2.4 rules 3–4)", () => {
  it("carries a namespace label change made on the api process to grandchildren via the outbox", async () => {
    const top = `root.cfw${rand()}`
    await r.namespace(top, { labels: { env: "dev" } })
    const child = (await r.namespace(`${top}.a`)).path
    const leaf = await r.namespace(`${top}.a.b`)
    const connector = await r.publishedConnector(top, { name: "gh" })
    const connection = await r.connection(connector.id, { namespace: child })
    const key = await r.create("keys", { namespace: child })
    expect([leaf, connection, key].map((resource) => resource.labels["svc/ns/env"])).toEqual(["dev", "dev", "dev"])

    const started = Date.now()
    await putLabel("namespaces", top, "env", "prod")
    const readAll = async () =>
      Promise.all([
        r.get("namespaces", leaf.path),
        r.get("keys", key.id),
        r.get<ConnectionBody>("connections", connection.id),
        r.get("connectors", connector.id)
      ])
    const all = await eventually(readAll, (rows) => rows.every((row) => row.labels["svc/ns/env"] === "prod"))
    expect(
      all.map((row) => row.labels["svc/ns/env"]),
      logs()
    ).toEqual(["prod", "prod", "prod", "prod"])
    expect(Date.now() - started).toBeLessThan(30_000)
    expect(all[0]!.labels).toEqual({ ...leaf.labels, "svc/ns/env": "prod" })
    expect(all[1]!.labels).toEqual({ ...key.labels, "svc/ns/env": "prod" })
    expect(all[2]!.labels).toEqual({ ...connection.labels, "svc/ns/env": "prod" })
    expect(await labelsInSql("keys", key.id)).toEqual(all[1]!.labels)
    const viaAdmin = expectStatus<Resource>(
      await svc.call("GET", `/api/v1/keys/${key.id}`, { service: "admin-api" }),
      200
    )
    expect(viaAdmin.labels).toEqual(all[1]!.labels)
    expect(
      await eventually(
        () => outboxFor([top]),
        (rows) => rows.length === 0,
        10_000
      )
    ).toEqual([])
  }, 60_000)

  it("carries a connector rename to its connections' svc/cxr/-/name", async () => {
    const ns = `root.cfn${rand()}`
    await r.namespace(ns)
    await r.namespace(`${ns}.team`)
    const connector = await r.publishedConnector(ns, { name: "before" })
    const near = await r.connection(connector.id)
    const far = await r.connection(connector.id, { namespace: `${ns}.team` })
    expect([near, far].map((c) => c.labels["svc/cxr/-/name"])).toEqual(["before", "before"])
    await rename(connector.id, "after")
    const readBoth = () => Promise.all([near, far].map((c) => r.get<ConnectionBody>("connections", c.id)))
    const both = await eventually(readBoth, (rows) => rows.every((row) => row.labels["svc/cxr/-/name"] === "after"))
    expect(both[0]!.labels, logs()).toEqual({ ...near.labels, "svc/cxr/-/name": "after" })
    expect(both[1]!.labels).toEqual({ ...far.labels, "svc/cxr/-/name": "after" })
    expect(
      await eventually(
        () => outboxFor([connector.id]),
        (rows) => rows.length === 0,
        10_000
      )
    ).toEqual([])
  }, 60_000)
})

describe("durability of the outbox (spec 2.4 rule 3)", () => {
  it("keeps queued changes while the worker is down and applies them when it is back", async () => {
    const top = `root.cfd${rand()}`
    await r.namespace(top)
    const child = (await r.namespace(`${top}.a`)).path
    const connector = await r.publishedConnector(top, { name: "old" })
    const connection = await r.connection(connector.id, { namespace: child })
    const key = await r.create("keys", { namespace: child })

    await stopWorker()
    await putLabel("namespaces", top, "tier", "gold")
    await rename(connector.id, "new")
    const queued = [
      { parentType: "namespace", parentId: top },
      { parentType: "connector", parentId: connector.id }
    ]
    expect(await outboxFor([top, connector.id])).toEqual(queued)
    await sleep(2_500)
    expect(await outboxFor([top, connector.id])).toEqual(queued)
    expect((await r.get("keys", key.id)).labels).toEqual(key.labels)
    expect((await r.get("connections", connection.id)).labels).toEqual(connection.labels)

    await startWorker("svc.yaml")
    const readBoth = () => Promise.all([r.get("keys", key.id), r.get<ConnectionBody>("connections", connection.id)])
    const both = await eventually(
      readBoth,
      ([k, c]) => k!.labels["svc/ns/tier"] === "gold" && c!.labels["svc/cxr/-/name"] === "new"
    )
    expect(both[0]!.labels, logs()).toEqual({ ...key.labels, "svc/ns/tier": "gold" })
    expect(both[1]!.labels).toEqual({ ...connection.labels, "svc/ns/tier": "gold", "svc/cxr/-/name": "new" })
    expect(
      await eventually(
        () => outboxFor([top, connector.id]),
        (rows) => rows.length === 0,
        10_000
      )
    ).toEqual([])
  }, 60_000)
})

describe("consistency checker (spec 2.4 rule 3)", () => {
  it("restores materialised labels corrupted directly in SQL", async () => {
    const top = `root.cfc${rand()}`
    await r.namespace(top, { labels: { tier: "gold", env: "prod" } })
    const child = (await r.namespace(`${top}.a`)).path
    const connector = await r.publishedConnector(top, { name: "gh" })
    const connection = await r.connection(connector.id, { namespace: child })
    const key = await r.create("keys", { namespace: child })
    expect(key.labels).toMatchObject({ "svc/ns/tier": "gold", "svc/ns/env": "prod", "svc/key/-/name": key.name })
    const sane = { key: await labelsInSql("keys", key.id), connection: await labelsInSql("connections", connection.id) }
    expect(sane).toEqual({ key: key.labels, connection: connection.labels })

    await corrupt("keys", key.id, ["svc/ns/tier", "svc/key/-/name"], { "svc/ns/env": "wrong" })
    await corrupt("connections", connection.id, ["svc/cxr/-/name"], { "svc/ns/tier": "lead" })
    const broken = {
      key: await labelsInSql("keys", key.id),
      connection: await labelsInSql("connections", connection.id)
    }
    const { "svc/ns/tier": _, "svc/key/-/name": __, ...keyRest } = key.labels
    expect(broken.key).toEqual({ ...keyRest, "svc/ns/env": "wrong" })
    // The 24h worker leaves drift alone: nothing was queued, and the checker is not due.
    await sleep(2_500)
    expect(await outboxFor([top, connector.id])).toEqual([])
    expect(await labelsInSql("keys", key.id)).toEqual(broken.key)
    expect((await r.get("connections", connection.id)).labels).toEqual(broken.connection)
    const before = await lastCheck()

    await stopWorker()
    await startWorker("svc-checker.yaml")
    const readBoth = async () => ({
      key: await labelsInSql("keys", key.id),
      connection: await labelsInSql("connections", connection.id)
    })
    const repaired = await eventually(
      readBoth,
      (rows) => isDeepStrictEqual(rows.key, sane.key) && isDeepStrictEqual(rows.connection, sane.connection)
    )
    expect(repaired, logs()).toEqual(sane)
    expect((await r.get("keys", key.id)).labels).toEqual(key.labels)
    // The run is recorded after its repairs are written: wait for the record, not only the rows.
    const after = await eventually(lastCheck, (run) => run!.lastRunAt.getTime() > before!.lastRunAt.getTime())
    expect(after!.lastRunAt.getTime()).toBeGreaterThan(before!.lastRunAt.getTime())
    expect(after!.ageMs).toBeLessThan(10_000)
    const corrected = /label consistency check corrected 2 row\(s\)/
    expect(
      await eventually(
        async () => worker?.output() ?? "",
        (output) => corrected.test(output)
      )
    ).toMatch(corrected)

    // Still periodic at 2s: a second drift is repaired by a later run.
    await corrupt("keys", key.id, ["svc/key/-/name"], { "svc/ns/tier": "bronze" })
    const again = await eventually(
      () => labelsInSql("keys", key.id),
      (labels) => isDeepStrictEqual(labels, sane.key),
      15_000
    )
    expect(again, logs()).toEqual(sane.key)
    // As above: the run that repaired it is recorded just after its repairs.
    const latest = await eventually(lastCheck, (run) => run!.lastRunAt.getTime() > after!.lastRunAt.getTime(), 15_000)
    expect(latest!.lastRunAt.getTime()).toBeGreaterThan(after!.lastRunAt.getTime())
    expect(latest!.ageMs).toBeLessThan(10_000)
  }, 60_000)
})
