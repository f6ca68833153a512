/**
 * A rolling upgrade's moves under load (issue item 6, docs/operations.md "Deploying a new
 * version"): on PostgreSQL + Redis, `svc migrate`, then worker A and an api process of this
 * build; steady proxied load (4 loops, each request bounded) runs through an api process the
 * whole time while
 *
 * - worker B joins and takes a share of the shards;
 * - version migrations (a hook that computes for a while) over several connections and a
 *   disconnect-all are started while B is up, and B is stopped with SIGTERM while they run (it
 *   leaves and hands its shards back);
 * - worker C joins, a second batch of migrations starts, and C is killed with SIGKILL mid-run;
 * - a second api process starts, the load moves to it (as a load balancer would), and the first
 *   gets SIGTERM with requests in flight (it drains them).
 *
 * Asserted: every proxied request answered 2xx (the count and latencies are printed), every task
 * ends `completed` within a bound with its effects applied once, no task lock or migration lock
 * is left behind. Loopback only, bounded in time; processes and the database are cleaned up.
 */
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  eventually,
  expectStatus,
  type MigrationHandle,
  mapLimit,
  resources,
  startApiProcess,
  type Svc,
  type TaskBody
} from "../support/Api.ts"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import { freePort, type Ports, type RunningSvc, runSvc, startSvc, waitForHttp } from "../support/SvcProcess.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

interface Worker {
  readonly name: string
  readonly healthPort: number
  readonly process: RunningSvc
}

let workspace: ProductionWorkspace | undefined
let upstream: Upstream | undefined
let token = ""
const workers: Array<Worker> = []
interface ApiProcess {
  readonly name: string
  readonly ports: Ports
  readonly running: RunningSvc
  readonly svc: Svc
}

/** Every api process started; `api` is the one the "load balancer" (the load loops, the test's calls) routes to. */
const apis: Array<ApiProcess> = []
let api: ApiProcess | undefined

const startApi = async (name: string): Promise<ApiProcess> => {
  const started = { name, ...(await startApiProcess(workspace!.dir, token)) }
  apis.push(started)
  return started
}

const alive = (w: Worker) => w.process.child.exitCode === null && w.process.child.signalCode === null

const logs = () =>
  [...workers.map((w) => [w.name, w.process] as const), ...apis.map((a) => [`api ${a.name}`, a.running] as const)]
    .map(([name, p]) => `--- ${name}:\n${p.output().slice(-3000)}`)
    .join("\n")

const ownedShards = async (w: Worker) => {
  try {
    const health = (await (
      await fetch(`http://127.0.0.1:${w.healthPort}/healthz`, { signal: AbortSignal.timeout(2_000) })
    ).json()) as { runner?: { ownedShards?: number } }
    return health.runner?.ownedShards ?? 0
  } catch {
    return 0
  }
}

/** Until the live runners are registered and together own every shard, each some. */
const settled = async () => {
  const owned = await eventually(
    () => Promise.all(workers.filter(alive).map(ownedShards)),
    (all) => all.every((n) => n > 0) && all.reduce((x, y) => x + y, 0) === 300,
    45_000
  )
  expect(
    owned.reduce((x, y) => x + y, 0),
    logs()
  ).toBe(300)
  return owned
}

const startWorker = async (name: string): Promise<Worker> => {
  const healthPort = await freePort()
  const process = startSvc(["serve", "--service", "worker"], {
    cwd: workspace!.dir,
    env: { SVC__worker__port: String(healthPort), SVC__cluster__runner__port: String(await freePort()) }
  })
  const worker = { name, healthPort, process }
  workers.push(worker)
  await waitForHttp(`http://127.0.0.1:${healthPort}/ping`, process, 60_000)
  return worker
}

const readTask = async (taskId: string) =>
  expectStatus<TaskBody>(await api!.svc.call("GET", `/api/v1/tasks/${taskId}`), 200)

const taskStates = (ids: ReadonlyArray<string>) => mapLimit(ids, 8, readTask)

const form = (properties: Record<string, unknown>) => ({ type: "object", properties, additionalProperties: false })

const definition = (configure: Record<string, unknown>, up?: string) => ({
  type: "demo",
  auth: { type: "none" },
  setup_flow: { configure: { steps: [{ id: "basics", json_schema: form(configure) }] } },
  ...(up === undefined ? {} : { migrations: { up: { javascript: up } } })
})

/** Computes for a while (no clock in hooks: a bounded loop), then increments what it sees. */
const slowCountingHook = `(() => {
  let x = 0
  for (let i = 0; i < 1000000; i++) x = (x + i) % 7
  return {
    config: { set: { count: (cfg.count || 0) + 1, spin: x } },
    labels: { set: { n: String(Number(labels.n || "0") + 1) } },
    annotations: { set: { trail: (annotations.trail || "") + "v2.up;" } }
  }
})()`

/** A published v1 connector with `count` connections (label n=0) and a published v2 whose hook is the slow one. */
const migrationFleet = async (prefix: string, count: number) => {
  const r = resources(api!.svc)
  const ns = await r.freshNamespace(prefix)
  const connector = await r.publishedConnector(ns, { definition: definition({ host: { type: "string" } }) })
  const ids = await mapLimit(
    Array.from({ length: count }, (_, i) => i),
    4,
    async (i) => (await r.connection(connector.id, { configuration: { host: `h${i}` }, labels: { n: "0" } })).id
  )
  const v2 = expectStatus<{ version: number }>(
    await api!.svc.call("POST", `/api/v1/connectors/${connector.id}/versions`, {
      body: {
        definition: definition(
          { host: { type: "string" }, count: { type: "integer" }, spin: { type: "integer" } },
          slowCountingHook
        )
      }
    }),
    201
  )
  await r.publish(connector.id, v2.version)
  return { connectorId: connector.id, ids }
}

const startMigrations = (ids: ReadonlyArray<string>) =>
  mapLimit(ids, 4, async (id) =>
    expectStatus<MigrationHandle>(
      await api!.svc.call<MigrationHandle>("POST", `/api/v1/connections/${id}/_migrate_version`, {
        body: { target_version: 2, timeout_seconds: 300 }
      }),
      202
    )
  )

/** Each migrated connection on v2 with its counter label 1 and its trail written once. */
const expectMigratedOnce = async (connectorId: string, count: number) => {
  const rows = await Effect.runPromise(
    workspace!.sql<{
      readonly id: string
      readonly connectorVersion: number
      readonly labels: Record<string, string>
      readonly annotations: Record<string, string>
    }>`SELECT id, connector_version, labels, annotations FROM connections
       WHERE connector_id = ${connectorId} AND deleted_at IS NULL`
  )
  expect(rows).toHaveLength(count)
  expect(
    rows.filter((r) => r.connectorVersion !== 2 || r.labels.n !== "1" || r.annotations.trail !== "v2.up;")
  ).toEqual([])
}

/** Steady proxied load: `loops` loops, one connection each, every request bounded by 10 s. */
const steadyLoad = (connectionIds: ReadonlyArray<string>) => {
  let stopping = false
  let ok = 0
  const failures: Array<string> = []
  const latencies: Array<number> = []
  const loop = async (connectionId: string) => {
    while (!stopping) {
      const started = performance.now()
      try {
        const response = await fetch(
          `http://127.0.0.1:${api!.ports.api}/api/v1/connections/${connectionId}/_proxy_raw`,
          {
            headers: { authorization: `Bearer ${token}`, "x-svc-upstream-url": `${upstream!.origin}/json` },
            signal: AbortSignal.timeout(10_000)
          }
        )
        const body = await response.text()
        if (response.status >= 200 && response.status < 300) ok++
        else failures.push(`${new Date().toISOString()} ${response.status} ${body.slice(0, 200)}`)
      } catch (error) {
        failures.push(`${new Date().toISOString()} ${String(error)}`)
      }
      latencies.push(performance.now() - started)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  const running = Promise.all(connectionIds.map(loop))
  return {
    ok: () => ok,
    failures: () => failures,
    stop: async () => {
      stopping = true
      await running
      const sorted = [...latencies].sort((x, y) => x - y)
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
      return { ok, failures, p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] ?? 0 }
    }
  }
}

beforeAll(async () => {
  upstream = await startUpstream()
  upstream.route("/json", () => ({ status: 200, headers: { "content-type": "application/json" }, body: '{"ok":1}' }))
  workspace = await productionWorkspace("svc-e2e-rolling-")
  await workspace.writeConfig(["outbound: { allow_private_networks: true }"])
  const migrated = await runSvc(["migrate"], { cwd: workspace.dir })
  expect(migrated.code, migrated.output).toBe(0)
  token = await workspace.opsToken("2h")
  await startWorker("A")
  await settled()
  api = await startApi("1")
}, 180_000)

afterAll(async () => {
  await Promise.all([...workers.map((w) => w.process.stop("SIGKILL")), ...apis.map((a) => a.running.stop("SIGKILL"))])
  await upstream?.close()
  await workspace?.close()
}, 60_000)

describe("rolling upgrade moves under proxied load (PostgreSQL + Redis)", () => {
  it("workers join and leave while tasks run: no failed request, every task completes, no lock left", async () => {
    const r = resources(api!.svc)
    const ns = await r.freshNamespace("rolling")
    const proxied = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: { type: "api_key", placement: "bearer" },
        proxy: { allowed_hosts: [`127.0.0.1:${upstream!.port}`], allow_private_networks: true }
      }
    })
    const loadConnections = await mapLimit([0, 1, 2, 3], 4, async (i) => {
      return (await r.connection(proxied.id, { credentials: { api_key: `k-${i}` } })).id
    })
    const first = await migrationFleet("rollmiga", 16)
    const second = await migrationFleet("rollmigb", 12)
    const disconnectNs = await r.freshNamespace("rolldisc")
    const disconnectConnector = await r.publishedConnector(disconnectNs)
    await mapLimit(
      Array.from({ length: 30 }, (_, i) => i),
      4,
      async () => r.connection(disconnectConnector.id)
    )

    const load = steadyLoad(loadConnections)
    const testStarted = Date.now()
    const at = () => `${((Date.now() - testStarted) / 1000).toFixed(1)} s`
    try {
      await new Promise((resolve) => setTimeout(resolve, 2_000))

      // Worker B joins and takes a share of the shards.
      const b = await startWorker("B")
      const split = await settled()
      console.log(`${at()}: worker B joined, shards ${split.join(" / ")}; ${load.ok()} requests answered so far`)

      // Tasks started while B is up: migrations over 16 connections and a disconnect-all of 30.
      const handles = await startMigrations(first.ids)
      const disconnectTask = expectStatus<{ taskId: string }>(
        await api!.svc.call("POST", `/api/v1/connectors/${disconnectConnector.id}/_disconnectAll`, {
          body: { timeoutSeconds: 300 }
        }),
        202
      ).taskId
      const taskIds = [...handles.map((h) => h.task_id), disconnectTask]
      // B leaves (SIGTERM) while the runs are under way: once it has logged a hook run of this batch.
      const hookOnB = () =>
        first.ids.some((id) => b.process.output().includes(`running hook v2.up of connection ${id}`))
      // (Were every run on A's shards, B would leave without having run any: logged, not failed.)
      const ranOnB = await eventually(
        async () => hookOnB(),
        (seen) => seen,
        60_000
      )
      const beforeStop = await taskStates(taskIds)
      const stoppedAt = Date.now()
      const code = await b.process.stop("SIGTERM")
      console.log(
        `${at()}: SIGTERM of worker B (${ranOnB ? "running" : "not running"} hooks of this batch) with ` +
          `${beforeStop.filter((t) => t.state === "active").length}/` +
          `${taskIds.length} tasks active: exited ${code} after ${Date.now() - stoppedAt} ms`
      )
      expect(code, logs()).toBe(0)
      expect(await settled()).toEqual([300])

      // Worker C joins, a second batch starts, and C is killed mid-run.
      const c = await startWorker("C")
      console.log(`${at()}: worker C joined, shards ${(await settled()).join(" / ")}`)
      const secondHandles = await startMigrations(second.ids)
      const secondIds = secondHandles.map((h) => h.task_id)
      const hookOnC = () =>
        second.ids.some((id) => c.process.output().includes(`running hook v2.up of connection ${id}`))
      await eventually(
        async () => hookOnC(),
        (seen) => seen,
        60_000
      )
      const beforeKill = await taskStates(secondIds)
      await c.process.stop("SIGKILL")
      const killedAt = Date.now()
      console.log(
        `${at()}: SIGKILL of worker C with ${beforeKill.filter((t) => t.state === "active").length}/` +
          `${secondIds.length} tasks of the second batch active`
      )

      // The api process is replaced the way a load balancer does it: a new one starts, traffic moves
      // to it, then the old one gets SIGTERM and drains what it still has in flight.
      const previous = api!
      const next = await startApi("2")
      api = next
      const drainStarted = Date.now()
      const drained = await previous.running.stop("SIGTERM")
      console.log(
        `${at()}: api process ${next.name} took the traffic; ${previous.name} exited ${drained} ` +
          `${Date.now() - drainStarted} ms after SIGTERM`
      )
      expect(drained, logs()).toBe(0)

      // Every task ends within a bound, on worker A alone.
      const all = [...taskIds, ...secondIds]
      const ended = await eventually(
        () => taskStates(all),
        (tasks) => tasks.every((t) => t.state !== "active"),
        150_000
      )
      console.log(
        `${at()}: every task ended, ${((Date.now() - stoppedAt) / 1000).toFixed(1)} s after B's SIGTERM, ` +
          `${((Date.now() - killedAt) / 1000).toFixed(1)} s after C's SIGKILL`
      )
      expect(
        ended.filter((t) => t.state !== "completed"),
        logs()
      ).toEqual([])
      await new Promise((resolve) => setTimeout(resolve, 1_000))
    } finally {
      const result = await load.stop()
      console.log(
        `proxied load: ${result.ok} requests answered 2xx, ${result.failures.length} failed over ` +
          `${((Date.now() - testStarted) / 1000).toFixed(1)} s (4 loops); latency p50 ${result.p50.toFixed(1)} ms, ` +
          `p99 ${result.p99.toFixed(1)} ms, max ${result.max.toFixed(0)} ms`
      )
      expect(result.failures.slice(0, 20), logs()).toEqual([])
      expect(result.ok).toBeGreaterThan(100)
    }

    // Effects applied once; the disconnect-all ended every connection.
    await expectMigratedOnce(first.connectorId, 16)
    await expectMigratedOnce(second.connectorId, 12)
    const disconnected = await Effect.runPromise(
      workspace!.sql<{ readonly n: number }>`
        SELECT COUNT(*)::int AS n FROM connections
        WHERE connector_id = ${disconnectConnector.id} AND state = 'disconnected' AND deleted_at IS NOT NULL`
    )
    expect(disconnected[0]?.n).toBe(30)

    // No lock left: no task holds its lock key, no connection holds a migration lock.
    const locked = await Effect.runPromise(
      workspace!.sql<{ readonly n: number }>`SELECT COUNT(*)::int AS n FROM tasks WHERE lock_key IS NOT NULL`
    )
    expect(locked[0]?.n).toBe(0)
    const migrationLocks = await Effect.runPromise(
      workspace!.sql<{ readonly connectionId: string }>`
        SELECT connection_id FROM connection_controls WHERE migration_lock_owner IS NOT NULL`
    )
    expect(migrationLocks).toEqual([])
    // And a new migration of one of them starts at once (the entity agrees the lock is free).
    const back = await api!.svc.call<MigrationHandle>("POST", `/api/v1/connections/${first.ids[0]}/_migrate_version`, {
      body: { target_version: 1 }
    })
    expect(back.status, JSON.stringify(back.body)).toBe(202)
  }, 420_000)
})
