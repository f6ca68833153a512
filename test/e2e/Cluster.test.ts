/**
 * The cluster with real processes on PostgreSQL (issue 14): three `svc serve --service worker`
 * runners and two client-only cluster members (the shape of api processes) calling the
 * `Connection` entity; one live instance per connection; SIGKILL and SIGTERM of the owning runner
 * hand the entity over with its cool-down and migration lock intact; a new runner takes shards
 * without losing a lock; an api process keeps proxying while every worker is down. Handoff
 * times are printed (measured, never asserted beyond a generous bound). Every process runs the
 * runner transport over mutual TLS (`cluster.tls`, certificates written once by `svc certs`).
 * Loopback only, bounded.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { caller, eventually, expectStatus, resources, type Svc } from "../support/Api.ts"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import {
  freePort,
  freePorts,
  type Ports,
  portEnv,
  type RunningSvc,
  runSvc,
  startSvc,
  waitForHttp
} from "../support/SvcProcess.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

const clientMain = fileURLToPath(new URL("../support/clusterClient.ts", import.meta.url))

interface RunnerHealth {
  readonly runner?: { readonly address: string; readonly registered: boolean; readonly ownedShards: number }
}

interface Worker {
  readonly name: string
  readonly healthPort: number
  readonly runnerPort: number
  readonly process: RunningSvc
}

/** A client-only cluster member answering JSON commands (test/support/clusterClient.ts). */
interface ClusterClient {
  readonly send: <T>(op: string, connectionId: string, extra?: Record<string, unknown>) => Promise<T>
  readonly timed: <T>(op: string, connectionId: string) => Promise<{ result: T; ms: number }>
  readonly stop: () => void
}

/** svc's default `cluster.*` timings (docs/configuration.md), which an api process runs with. */
const svcTimings = JSON.stringify({
  shardLockRefreshInterval: 2_000,
  shardLockExpiration: 10_000,
  refreshAssignmentsInterval: 1_000,
  runnerHealthCheckInterval: 5_000,
  entityMessagePollInterval: 1_000
})

const startClient = async (url: string, certs: string): Promise<ClusterClient> => {
  const child: ChildProcess = spawn(process.execPath, [clientMain, url, svcTimings, certs], {
    stdio: ["pipe", "pipe", "pipe"]
  })
  let buffer = ""
  let log = ""
  let nextId = 1
  const pending = new Map<number, (answer: { ok: boolean; result?: unknown; error?: string; ms: number }) => void>()
  let ready: () => void = () => {}
  const isReady = new Promise<void>((resolve) => {
    ready = resolve
  })
  child.stderr?.on("data", (chunk: Buffer) => {
    log += chunk.toString("utf8")
  })
  child.stdout?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8")
    let newline = buffer.indexOf("\n")
    while (newline >= 0) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      newline = buffer.indexOf("\n")
      if (!line.startsWith("{")) continue
      const message = JSON.parse(line) as { ready?: boolean; id?: number; ok: boolean; ms: number }
      if (message.ready) ready()
      else if (message.id !== undefined) pending.get(message.id)?.(message)
    }
  })
  const timeout = setTimeout(() => child.kill("SIGKILL"), 30_000)
  await Promise.race([
    isReady,
    new Promise((_, reject) => child.once("exit", () => reject(new Error(`cluster client exited:\n${log}`))))
  ])
  clearTimeout(timeout)
  const call = (op: string, connectionId: string, extra: Record<string, unknown> = {}) =>
    new Promise<{ ok: boolean; result?: unknown; error?: string; ms: number }>((resolve, reject) => {
      const id = nextId++
      const timer = setTimeout(() => reject(new Error(`${op} ${connectionId}: no answer in 60 s\n${log}`)), 60_000)
      pending.set(id, (answer) => {
        clearTimeout(timer)
        pending.delete(id)
        resolve(answer)
      })
      child.stdin?.write(`${JSON.stringify({ id, op, connectionId, ...extra })}\n`)
    })
  const send = async <T>(op: string, connectionId: string, extra: Record<string, unknown> = {}) => {
    const answer = await call(op, connectionId, extra)
    if (!answer.ok) throw new Error(`${op} failed: ${answer.error}`)
    return answer.result as T
  }
  const timed = async <T>(op: string, connectionId: string) => {
    const answer = await call(op, connectionId)
    if (!answer.ok) throw new Error(`${op} failed: ${answer.error}`)
    return { result: answer.result as T, ms: answer.ms }
  }
  return { send, timed, stop: () => child.kill("SIGKILL") }
}

interface CoolDownView {
  readonly consecutive429s: number
}
interface LockAnswer {
  readonly _tag: "Acquired" | "HeldBy"
  readonly owner: string
}

describe("cluster on PostgreSQL: 3 runners, 2 client-only members, 1 api process", () => {
  let dir: string
  let workspace: ProductionWorkspace | undefined
  let url: string
  const workers: Array<Worker> = []
  const clients: Array<ClusterClient> = []
  let api: RunningSvc | undefined
  let upstream: Upstream | undefined
  const connection = `cxn_${randomBytes(10).toString("hex").slice(0, 26).padEnd(26, "a")}`

  const health = async (worker: Worker): Promise<RunnerHealth> => {
    try {
      return (await (await fetch(`http://127.0.0.1:${worker.healthPort}/healthz`)).json()) as RunnerHealth
    } catch {
      return {}
    }
  }

  const startWorker = async (name: string): Promise<Worker> => {
    const healthPort = await freePort()
    const runnerPort = await freePort()
    const process = startSvc(["serve", "--service", "worker"], {
      cwd: dir,
      env: { SVC__worker__port: String(healthPort), SVC__cluster__runner__port: String(runnerPort) }
    })
    const worker = { name, healthPort, runnerPort, process }
    workers.push(worker)
    await waitForHttp(`http://127.0.0.1:${healthPort}/ping`, process)
    return worker
  }

  const live = () => workers.filter((w) => w.process.child.exitCode === null && w.process.child.signalCode === null)

  /** Waits until the live runners are registered and together own every shard, each some. */
  const settled = async () => {
    const read = () => Promise.all(live().map(health))
    const reports = await eventually(read, (all) => {
      const owned = all.map((h) => h.runner?.ownedShards ?? 0)
      return owned.every((n) => n > 0) && owned.reduce((a, b) => a + b, 0) === 300
    })
    return reports.map((h) => h.runner?.ownedShards ?? 0)
  }

  const ownerOf = async (id: string) => {
    const address = await clients[0]!.send<string>("whereabouts", id)
    const worker = workers.find((w) => address.endsWith(`:${w.runnerPort}`))
    expect(worker, `runner ${address}`).toBeDefined()
    return worker!
  }

  beforeAll(async () => {
    workspace = await productionWorkspace("svc-e2e-cluster-")
    dir = workspace.dir
    url = workspace.url
    const certs = path.join(dir, "certs")
    const made = await runSvc(["certs", "--out", certs], { cwd: dir })
    expect(made.code, made.output).toBe(0)
    await workspace.writeConfig([
      "outbound: { allow_private_networks: true }",
      "cluster: { tls: { ca: certs/ca.pem, cert: certs/runner.pem, key: certs/runner-key.pem } }"
    ])
    const migrated = await runSvc(["migrate"], { cwd: dir })
    expect(migrated.code, migrated.output).toBe(0)
    for (const name of ["w1", "w2", "w3"]) await startWorker(name)
    await settled()
    clients.push(await startClient(url, certs), await startClient(url, certs))
  }, 180_000)

  afterAll(async () => {
    for (const client of clients) client.stop()
    await Promise.all([...workers.map((w) => w.process.stop("SIGKILL")), api?.stop("SIGKILL")])
    await upstream?.close()
    await workspace?.close()
  })

  it("three runners share the shards, each reporting its own in /healthz", async () => {
    const owned = await settled()
    expect(owned).toHaveLength(3)
    const addresses = (await Promise.all(workers.map(health))).map((h) => h.runner?.address)
    expect(new Set(addresses).size).toBe(3)
    console.log(`shards owned by 3 runners: ${owned.join(" / ")}`)
  }, 60_000)

  it("calls from two client-only members reach one live instance per connection", async () => {
    const calls = Array.from({ length: 30 }, (_, i) => clients[i % 2]!.send<CoolDownView>("report429", connection))
    const counts = (await Promise.all(calls)).map((c) => c.consecutive429s).sort((a, b) => a - b)
    // One writer: every report saw the previous one, whichever process sent it.
    expect(counts).toEqual(Array.from({ length: 30 }, (_, i) => i + 1))
    const [a, b] = await Promise.all(clients.map((c) => c.send<string>("whereabouts", connection)))
    expect(a).toBe(b)
    const latencies: Array<number> = []
    for (let i = 0; i < 50; i++) latencies.push((await clients[1]!.timed("coolDown", connection)).ms)
    latencies.sort((x, y) => x - y)
    console.log(
      `entity call from a client-only process: p50 ${latencies[25]!.toFixed(2)} ms, p99 ${latencies[49]!.toFixed(2)} ms`
    )
  }, 90_000)

  it("the migration lock has one holder across processes", async () => {
    expect(await clients[0]!.send<LockAnswer>("acquire", connection, { owner: "mig-a", ttlMs: 600_000 })).toMatchObject(
      {
        _tag: "Acquired",
        owner: "mig-a"
      }
    )
    expect(await clients[1]!.send<LockAnswer>("acquire", connection, { owner: "mig-b", ttlMs: 600_000 })).toMatchObject(
      {
        _tag: "HeldBy",
        owner: "mig-a"
      }
    )
  }, 30_000)

  const expectIntact = async () => {
    expect((await clients[1]!.send<CoolDownView>("coolDown", connection)).consecutive429s).toBe(30)
    expect(await clients[1]!.send<{ owner: string } | null>("inspect", connection)).toMatchObject({ owner: "mig-a" })
    expect(await clients[1]!.send<LockAnswer>("acquire", connection, { owner: "mig-b", ttlMs: 1000 })).toMatchObject({
      _tag: "HeldBy"
    })
  }

  it("SIGKILL of the owning runner: another runner answers, cool-down and lock intact", async () => {
    const owner = await ownerOf(connection)
    await owner.process.stop("SIGKILL")
    const started = Date.now()
    await clients[1]!.send<CoolDownView>("coolDown", connection)
    const handoffMs = Date.now() - started
    console.log(`entity answers again ${handoffMs} ms after SIGKILL of its runner`)
    expect(handoffMs).toBeLessThan(45_000)
    expect((await ownerOf(connection)).name).not.toBe(owner.name)
    await expectIntact()
  }, 90_000)

  it("SIGTERM of the owning runner hands the entity over cleanly", async () => {
    const owner = await ownerOf(connection)
    const stopping = owner.process.stop("SIGTERM")
    const started = Date.now()
    await clients[0]!.send<CoolDownView>("coolDown", connection)
    const handoffMs = Date.now() - started
    expect(await stopping).toBe(0)
    console.log(`entity answers again ${handoffMs} ms after SIGTERM of its runner`)
    expect(handoffMs).toBeLessThan(30_000)
    await expectIntact()
  }, 90_000)

  it("a new runner takes a share of the shards without losing the lock", async () => {
    expect(live()).toHaveLength(1)
    await startWorker("w4")
    const owned = await settled()
    expect(owned).toHaveLength(2)
    console.log(`after a runner joined: ${owned.join(" / ")}`)
    await expectIntact()
  }, 90_000)

  it("an api process keeps proxying while every worker is down", async () => {
    upstream = await startUpstream()
    upstream.route("/json", () => ({ status: 200, headers: { "content-type": "application/json" }, body: '{"ok":1}' }))
    const ports: Ports = await freePorts()
    api = startSvc(["serve", "--service", "api"], { cwd: dir, env: portEnv(ports) })
    await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, api)
    const token = await workspace!.opsToken()
    const running = api
    const svc: Svc = {
      ports,
      adminToken: token,
      output: () => running.output(),
      call: caller(ports, token),
      sign: async () => token,
      stop: async () => {
        await running.stop()
      }
    }
    const r = resources(svc)
    const ns = await r.freshNamespace("cluster")
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: { type: "api_key", placement: "bearer" },
        proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
      }
    })
    const created = await r.connection(connector.id, { credentials: { api_key: "k-123" } })
    const proxy = () =>
      fetch(`http://127.0.0.1:${ports.api}/api/v1/connections/${created.id}/_proxy_raw`, {
        headers: { authorization: `Bearer ${token}`, "x-svc-upstream-url": `${upstream!.origin}/json` }
      })
    expect((await proxy()).status).toBe(200)
    await Promise.all(live().map((w) => w.process.stop("SIGKILL")))
    expect(live()).toHaveLength(0)
    for (let i = 0; i < 5; i++) {
      const answer = await proxy()
      expect(answer.status).toBe(200)
      expect(await answer.json()).toEqual({ ok: 1 })
    }
    expectStatus(await svc.call("GET", `/api/v1/connections/${created.id}`), 200)
    expect((await fetch(`http://127.0.0.1:${ports.api}/healthz`)).status).toBe(200)
  }, 120_000)
})
