/**
 * svc behind a real pgbouncer in transaction mode (issue: connection poolers): `database.url`
 * points at a private pgbouncer (test/support/Pgbouncer.ts) with `prepared_statements: false`;
 * `database.direct_url` points at PostgreSQL itself, for the session work (migrations and the
 * cluster's shard locks). Three `svc migrate` processes on the fresh database at once: all exit 0,
 * exactly one applies, the others find the schema up to date. Then one worker and two api
 * processes start; CRUD, proxying, a disconnect-all task and a version migration task complete
 * through them; the shards stay with the worker; and no process logs "Could not release shards",
 * a prepared-statement error or a request answered 5xx (the access log is on). Loopback only,
 * bounded in time; every process, pgbouncer and the database are cleaned up.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConnectionBody,
  eventually,
  expectStatus,
  mapLimit,
  type MigrationHandle,
  resources,
  startApiProcess,
  type Svc,
  type TaskBody
} from "../support/Api.ts"
import { type Pgbouncer, startPgbouncer } from "../support/Pgbouncer.ts"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import { freePort, type RunningSvc, runSvc, startSvc, waitForHttp } from "../support/SvcProcess.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

let workspace: ProductionWorkspace | undefined
let pgbouncer: Pgbouncer | undefined
let upstream: Upstream | undefined
let worker: { readonly healthPort: number; readonly process: RunningSvc } | undefined
const apis: Array<{ readonly name: string; readonly running: RunningSvc; readonly svc: Svc }> = []
let migrations: ReadonlyArray<{ readonly code: number | null; readonly output: string }> = []
let token = ""

const processes = () => [
  ...(worker === undefined ? [] : [["worker", worker.process] as const]),
  ...apis.map((a) => [a.name, a.running] as const)
]

const logs = () =>
  processes()
    .map(([name, p]) => `--- ${name}:\n${p.output().slice(-3000)}`)
    .join("\n")

const ownedShards = async () => {
  try {
    const response = await fetch(`http://127.0.0.1:${worker!.healthPort}/healthz`, {
      signal: AbortSignal.timeout(2_000)
    })
    return ((await response.json()) as { runner?: { ownedShards?: number } }).runner?.ownedShards ?? 0
  } catch {
    return 0
  }
}

const readTask = async (svc: Svc, taskId: string) =>
  expectStatus<TaskBody>(await svc.call("GET", `/api/v1/tasks/${taskId}`), 200)

const ended = async (svc: Svc, taskId: string) => {
  const task = await eventually(
    () => readTask(svc, taskId),
    (t) => t.state !== "active",
    90_000
  )
  expect(task.state, `${JSON.stringify(task)}\n${logs()}`).toBe("completed")
  return task
}

beforeAll(async () => {
  pgbouncer = await startPgbouncer()
  workspace = await productionWorkspace("svc-e2e-pooler-")
  const database = new URL(workspace.url).pathname.slice(1)
  await fs.writeFile(
    path.join(workspace.dir, "svc.yaml"),
    [
      ...workspace.baseConfig.filter((line) => !line.startsWith("database:")),
      "database:",
      "  provider: postgres",
      `  url: "${pgbouncer.url(database)}"`,
      "  prepared_statements: false",
      `  direct_url: "${workspace.url}"`,
      "  max_connections: 4",
      "log: { access: true }",
      "outbound: { allow_private_networks: true }"
    ].join("\n")
  )
  migrations = await Promise.all([1, 2, 3].map(() => runSvc(["migrate"], { cwd: workspace!.dir, timeoutMs: 90_000 })))
  for (const run of migrations) expect(run.code, run.output).toBe(0)
  token = await workspace.opsToken("2h")
  const healthPort = await freePort()
  const process = startSvc(["serve", "--service", "worker"], {
    cwd: workspace.dir,
    env: { SVC__worker__port: String(healthPort), SVC__cluster__runner__port: String(await freePort()) }
  })
  worker = { healthPort, process }
  await waitForHttp(`http://127.0.0.1:${healthPort}/ping`, process, 60_000)
  const owned = await eventually(ownedShards, (n) => n === 300, 60_000)
  expect(owned, logs()).toBe(300)
  for (const name of ["A", "B"]) {
    const { running, svc } = await startApiProcess(workspace.dir, token)
    apis.push({ name, running, svc })
  }
  upstream = await startUpstream()
  upstream.route("/json", () => ({ status: 200, headers: { "content-type": "application/json" }, body: '{"ok":1}' }))
}, 240_000)

afterAll(async () => {
  await Promise.all(processes().map(([, p]) => p.stop("SIGKILL")))
  await upstream?.close()
  await workspace?.close()
  await pgbouncer?.stop()
}, 60_000)

describe("svc behind pgbouncer in transaction mode, with direct_url for the session work", () => {
  it("three concurrent `svc migrate`: all exit 0, exactly one applies, the others find it up to date", () => {
    expect(migrations.map((m) => m.code)).toEqual([0, 0, 0])
    const applying = migrations.filter((m) => m.output.includes("main: applied 0001_initial"))
    expect(applying, migrations.map((m) => m.output).join("\n---\n")).toHaveLength(1)
    const upToDate = migrations.filter((m) => m.output.includes("migrations: already up to date"))
    expect(upToDate).toHaveLength(2)
    expect(upToDate.filter((m) => m.output.includes("applied"))).toEqual([])
  })

  it("CRUD through one api process is seen through the other", async () => {
    const [a, b] = [apis[0]!.svc, apis[1]!.svc]
    const ra = resources(a)
    const ns = await ra.freshNamespace("pooler")
    const connector = await ra.publishedConnector(ns)
    const ids = await mapLimit(
      Array.from({ length: 12 }, (_, i) => i),
      6,
      async (i) => (await ra.connection(connector.id, { labels: { i: String(i) } })).id
    )
    const read = await resources(b).get<ConnectionBody>("connections", ids[0]!)
    expect(read.labels.i).toBe("0")
    const patched = expectStatus<ConnectionBody>(
      await b.call("PATCH", `/api/v1/connections/${ids[1]}`, { body: { labels: { i: "one" } } }),
      200
    )
    expect(patched.labels.i).toBe("one")
    expect((await resources(a).get<ConnectionBody>("connections", ids[1]!)).labels.i).toBe("one")
    const disconnect = expectStatus<{ taskId: string }>(
      await a.call("POST", `/api/v1/connections/${ids[2]}/_disconnect`),
      202
    )
    await ended(b, disconnect.taskId)
    expect((await b.call("GET", `/api/v1/connections/${ids[2]}`)).status).toBe(404)
    const listed = await resources(b).listAll<ConnectionBody>("connections", { connectorId: connector.id, limit: "5" })
    expect(listed.map((c) => c.id).sort()).toEqual(ids.filter((id) => id !== ids[2]).sort())
  }, 60_000)

  it("proxies through both api processes", async () => {
    const r = resources(apis[0]!.svc)
    const ns = await r.freshNamespace("poolerproxy")
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: { type: "api_key", placement: "bearer" },
        proxy: { allowed_hosts: [`127.0.0.1:${upstream!.port}`], allow_private_networks: true }
      }
    })
    const created = await r.connection(connector.id, { credentials: { api_key: "k-123" } })
    for (const api of apis) {
      for (let i = 0; i < 5; i++) {
        const answer = await fetch(
          `http://127.0.0.1:${api.svc.ports.api}/api/v1/connections/${created.id}/_proxy_raw`,
          {
            headers: { authorization: `Bearer ${token}`, "x-svc-upstream-url": `${upstream!.origin}/json` }
          }
        )
        expect(answer.status, logs()).toBe(200)
        expect(await answer.json()).toEqual({ ok: 1 })
      }
    }
    const seen = upstream!.seen().filter((s) => s.path === "/json")
    expect(seen).toHaveLength(10)
    expect(seen.every((s) => s.headers.authorization === "Bearer k-123")).toBe(true)
  }, 60_000)

  it("a disconnect-all task started through A and polled through B completes", async () => {
    const [a, b] = [apis[0]!.svc, apis[1]!.svc]
    const r = resources(a)
    const connector = await r.publishedConnector(await r.freshNamespace("poolerdisc"))
    await mapLimit(
      Array.from({ length: 40 }, (_, i) => i),
      8,
      async () => r.connection(connector.id)
    )
    const { taskId } = expectStatus<{ taskId: string }>(
      await a.call("POST", `/api/v1/connectors/${connector.id}/_disconnectAll`, { body: { timeoutSeconds: 120 } }),
      202
    )
    const task = await ended(b, taskId)
    expect(task).toMatchObject({ type: "disconnect_all", state: "completed", progress: { total: 40, done: 40 } })
    expect(await resources(b).listAll<ConnectionBody>("connections", { connectorId: connector.id })).toEqual([])
  }, 120_000)

  it("a version migration task completes with its hook applied", async () => {
    const [a, b] = [apis[0]!.svc, apis[1]!.svc]
    const r = resources(a)
    const form = { type: "object", properties: { host: { type: "string" } }, additionalProperties: false }
    const v1 = {
      type: "demo",
      auth: { type: "none" },
      setup_flow: { configure: { steps: [{ id: "basics", json_schema: form }] } }
    }
    const connector = await r.publishedConnector(await r.freshNamespace("poolermig"), { definition: v1 })
    const connection = await r.connection(connector.id, { configuration: { host: "h" }, labels: { n: "0" } })
    const v2 = expectStatus<{ version: number }>(
      await a.call("POST", `/api/v1/connectors/${connector.id}/versions`, {
        body: {
          definition: {
            ...v1,
            migrations: { up: { javascript: "({ labels: { set: { n: String(Number(labels.n) + 1) } } })" } }
          }
        }
      }),
      201
    )
    await r.publish(connector.id, v2.version)
    const handle = expectStatus<MigrationHandle>(
      await b.call("POST", `/api/v1/connections/${connection.id}/_migrate_version`, {
        body: { target_version: v2.version, timeout_seconds: 120 }
      }),
      202
    )
    await ended(a, handle.task_id)
    const migrated = await resources(b).get<ConnectionBody>("connections", connection.id)
    expect(migrated.labels.n).toBe("1")
  }, 120_000)

  it("the worker kept every shard, and no log shows a lost lock, a prepared-statement error or a 5xx", async () => {
    expect(await ownedShards()).toBe(300)
    // Every statement of the pooled clients went through pgbouncer.
    const database = new URL(workspace!.url).pathname.slice(1)
    expect(pgbouncer!.output()).toContain(`db=${database}`)
    for (const [name, p] of processes()) {
      const output = p.output()
      expect(output, name).not.toContain("Could not release shards")
      expect(output, name).not.toMatch(/prepared statement/i)
      expect(output.match(/^.*message=access.* status=5\d\d .*$/gm) ?? [], name).toEqual([])
    }
    // The access log is on, so the check above looked at real request lines.
    for (const api of apis) expect(api.running.output()).toMatch(/message=access .* status=20[01] /)
  }, 30_000)
})
