/**
 * Version migration on PostgreSQL + Redis with real processes (issue 18 item 6): one `svc serve
 * --service worker` (the workflows and the hook sandbox) and two `svc serve --service api`
 * processes (A and B) on one fresh database.
 *
 * - The migration lock is the `Connection` entity's, cluster-wide: two starts for one connection
 *   at once, one through A and one through B, give one 202 and one 409 `migration_in_progress`.
 * - 30 connections migrate v1 → v2 with a hook that computes for a while and increments a label,
 *   a configuration value and an annotation trail; the only worker is SIGKILLed while some tasks
 *   are done and others are in their hooks; a new worker resumes the runs and every task
 *   completes with the hooks' effects applied exactly once (counter 1, trail written once).
 * Loopback only, bounded in time; processes and the database are cleaned up.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  eventually,
  expectStatus,
  mapLimit,
  resources,
  startApiProcess,
  type Svc,
  type TaskBody,
  type MigrationHandle
} from "../support/Api.ts"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import { freePort, type RunningSvc, runSvc, startSvc, waitForHttp } from "../support/SvcProcess.ts"

interface Worker {
  readonly name: string
  readonly healthPort: number
  readonly process: RunningSvc
}

let workspace: ProductionWorkspace | undefined
let token = ""
const workers: Array<Worker> = []
const apis: Array<{ readonly name: string; readonly running: RunningSvc; readonly svc: Svc }> = []
let serial = 0

const alive = (w: Worker) => w.process.child.exitCode === null && w.process.child.signalCode === null

const logs = () =>
  [...workers.map((w) => [w.name, w.process] as const), ...apis.map((a) => [a.name, a.running] as const)]
    .map(([name, p]) => `--- ${name}:\n${p.output().slice(-3000)}`)
    .join("\n")

const startWorker = async (): Promise<Worker> => {
  const name = `w${++serial}`
  const healthPort = await freePort()
  const process = startSvc(["serve", "--service", "worker"], {
    cwd: workspace!.dir,
    env: {
      SVC__worker__port: String(healthPort),
      SVC__cluster__runner__port: String(await freePort()),
      // The hooks spin on purpose; on a loaded machine they may take longer than the 5 s default,
      // and a timeout is not what this test is about.
      SVC__migrations__hook_timeout: "60s"
    }
  })
  const worker = { name, healthPort, process }
  workers.push(worker)
  await waitForHttp(`http://127.0.0.1:${healthPort}/ping`, process, 60_000)
  // Ready once its runner owns every shard (it is the only live one).
  await eventually(
    async () => {
      try {
        const response = await fetch(`http://127.0.0.1:${healthPort}/healthz`, { signal: AbortSignal.timeout(2_000) })
        return ((await response.json()) as { runner?: { ownedShards?: number } }).runner?.ownedShards ?? 0
      } catch {
        return 0
      }
    },
    (owned) => owned === 300,
    60_000
  )
  return worker
}

const startApi = async (name: string) => {
  const { running, svc } = await startApiProcess(workspace!.dir, token)
  apis.push({ name, running, svc })
  return svc
}

const readTask = async (svc: Svc, taskId: string) =>
  expectStatus<TaskBody>(await svc.call("GET", `/api/v1/tasks/${taskId}`), 200)

/** The rows of the connector's connections, straight from the database. */
const rowsOf = (connectorId: string) =>
  Effect.runPromise(
    workspace!.sql<{
      readonly id: string
      readonly connectorVersion: number
      readonly labels: Record<string, string>
      readonly annotations: Record<string, string>
    }>`SELECT id, connector_version, labels, annotations FROM connections WHERE connector_id = ${connectorId} AND deleted_at IS NULL`
  )

const form = (properties: Record<string, unknown>) => ({
  type: "object",
  properties,
  additionalProperties: false
})

const definition = (configure: Record<string, unknown>, up?: string) => ({
  type: "demo",
  auth: { type: "none" },
  setup_flow: { configure: { steps: [{ id: "basics", json_schema: form(configure) }] } },
  ...(up === undefined ? {} : { migrations: { up: { javascript: up } } })
})

/** Computes for a while (no clock in hooks: a bounded loop), then increments what it sees. */
const slowCountingHook = `(() => {
  let x = 0
  for (let i = 0; i < 4000000; i++) x = (x + i) % 7
  return {
    config: { set: { count: (cfg.count || 0) + 1, spin: x } },
    labels: { set: { n: String(Number(labels.n || "0") + 1) } },
    annotations: { set: { trail: (annotations.trail || "") + "v2.up;" } },
    notifications: { set: [{ key: "migrated.v2", level: "info", title: "Moved to version 2" }] }
  }
})()`

/** A published v1 connector with `count` connections (label n=0) and a v2 whose hook is `up`. */
const fleet = async (svc: Svc, prefix: string, count: number, up: string) => {
  const r = resources(svc)
  const ns = await r.freshNamespace(prefix)
  const connector = await r.publishedConnector(ns, { definition: definition({ host: { type: "string" } }) })
  const ids = await mapLimit(
    Array.from({ length: count }, (_, i) => i),
    8,
    async (i) => (await r.connection(connector.id, { configuration: { host: `h${i}` }, labels: { n: "0" } })).id
  )
  const v2 = expectStatus<{ version: number }>(
    await svc.call("POST", `/api/v1/connectors/${connector.id}/versions`, {
      body: {
        definition: definition({ host: { type: "string" }, count: { type: "integer" }, spin: { type: "integer" } }, up)
      }
    }),
    201
  )
  await r.publish(connector.id, v2.version)
  return { connectorId: connector.id, ids }
}

beforeAll(async () => {
  workspace = await productionWorkspace("svc-e2e-migration-")
  await workspace.writeConfig()
  const migrated = await runSvc(["migrate"], { cwd: workspace.dir })
  expect(migrated.code, migrated.output).toBe(0)
  token = await workspace.opsToken("2h")
  await startWorker()
  await startApi("A")
  await startApi("B")
}, 180_000)

afterAll(async () => {
  await Promise.all([...workers.map((w) => w.process.stop("SIGKILL")), ...apis.map((a) => a.running.stop("SIGKILL"))])
  await workspace?.close()
}, 60_000)

describe("version migration on PostgreSQL + Redis", () => {
  it("two starts at once through two api processes: one 202, one 409 migration_in_progress", async () => {
    const [a, b] = [apis[0]!.svc, apis[1]!.svc]
    const { ids } = await fleet(a, "mgprodlock", 1, slowCountingHook)
    const id = ids[0]!
    const body = { body: { target_version: 2, timeout_seconds: 120 } }
    const replies = await Promise.all([
      a.call<MigrationHandle>("POST", `/api/v1/connections/${id}/_migrate_version`, body),
      b.call<MigrationHandle>("POST", `/api/v1/connections/${id}/_migrate_version`, body)
    ])
    expect(replies.map((r) => r.status).sort(), JSON.stringify(replies.map((r) => r.body))).toEqual([202, 409])
    const refused = replies.find((r) => r.status === 409)!.body as unknown as { code: string }
    expect(refused.code).toBe("migration_in_progress")
    const accepted = replies.find((r) => r.status === 202)!.body
    const task = await eventually(
      () => readTask(a, accepted.task_id),
      (t) => t.state !== "active",
      60_000
    )
    expect(task.state, `${task.error}\n${logs()}`).toBe("completed")
  }, 120_000)

  it("SIGKILL of the only worker mid-migration: a new worker resumes every run; hooks applied exactly once", async () => {
    const a = apis[0]!.svc
    const b = apis[1]!.svc
    const count = 30
    const { connectorId, ids } = await fleet(a, "mgprodkill", count, slowCountingHook)
    const [worker] = workers.filter(alive)
    expect(worker).toBeDefined()
    const handles = await mapLimit(ids, 8, async (id) =>
      expectStatus<MigrationHandle>(
        await a.call<MigrationHandle>("POST", `/api/v1/connections/${id}/_migrate_version`, {
          body: { target_version: 2, timeout_seconds: 300 }
        }),
        202
      )
    )
    // Killed once some runs completed while others are in their hooks.
    const hooksRunning = () =>
      ids.filter((id) => worker!.process.output().includes(`running hook v2.up of connection ${id}`)).length
    const states = async () => Promise.all(handles.map((h) => readTask(b, h.task_id).then((t) => t.state)))
    const atKill = await eventually(
      async () => ({ states: await states(), running: hooksRunning() }),
      (s) => s.states.filter((x) => x === "completed").length >= 3 || s.states.every((x) => x !== "active"),
      120_000
    )
    const completedBefore = atKill.states.filter((x) => x === "completed").length
    expect(completedBefore, logs()).toBeLessThan(count)
    await worker!.process.stop("SIGKILL")
    console.log(
      `SIGKILL of ${worker!.name}: ${completedBefore}/${count} migrations completed, ` +
        `${atKill.running} hook run(s) logged so far`
    )
    const killedAt = Date.now()
    await startWorker()
    const finalStates = await eventually(
      () => Promise.all(handles.map((h) => readTask(b, h.task_id))),
      (tasks) => tasks.every((t) => t.state !== "active"),
      180_000
    )
    console.log(`every run ended ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the SIGKILL`)
    expect(
      finalStates.filter((t) => t.state !== "completed"),
      logs()
    ).toEqual([])
    const rows = await rowsOf(connectorId)
    expect(rows).toHaveLength(count)
    // Exactly once: every connection on v2, its counter label 1, the trail written once.
    expect(
      rows.filter((r) => r.connectorVersion !== 2 || r.labels.n !== "1" || r.annotations.trail !== "v2.up;")
    ).toEqual([])
    // The configuration counter (encrypted: read through the API).
    const counts = await mapLimit(
      ids,
      8,
      async (id) =>
        expectStatus<{ configuration: { count?: number } }>(await b.call("GET", `/api/v1/connections/${id}`), 200)
          .configuration.count
    )
    expect(counts.filter((n) => n !== 1)).toEqual([])
    // One notification per connection (keyed per connection).
    const notices = await Effect.runPromise(
      workspace!.sql<{ readonly n: number }>`
        SELECT COUNT(*)::int AS n FROM notifications
        WHERE key = 'migrated.v2' AND resolved_at IS NULL AND connection_id IN ${workspace!.sql.in(ids)}`
    )
    expect(notices[0]?.n).toBe(count)
    // The locks were released by the resumed runs: a new migration starts at once.
    const back = await a.call<MigrationHandle>("POST", `/api/v1/connections/${ids[0]}/_migrate_version`, {
      body: { target_version: 1 }
    })
    expect(back.status, JSON.stringify(back.body)).toBe(202)
  }, 360_000)
})
