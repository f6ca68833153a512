/**
 * Webhook delivery on PostgreSQL + Redis with real processes (issue 34): two `svc serve --service
 * worker` runners and one api process on one fresh database. 40 connection events go to a
 * receiver that holds every answer 400 ms, so deliveries are in flight; the worker that is
 * sending them (found by the receiver's peer port through /proc) is SIGKILLed mid-delivery. The
 * surviving worker takes the delivery singleton over and the expired leases are sent again:
 * every event arrives with a valid signature, none is lost, and a `webhook-id` arrives at most
 * twice (a duplicate only for an attempt that was in flight at the kill). Loopback only; retry
 * waits and the attempt timeout are shortened by configuration.
 */
import * as fs from "node:fs/promises"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  eventually,
  expectStatus,
  mapLimit,
  type PageBody,
  resources,
  startApiProcess,
  type Svc
} from "../support/Api.ts"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import { freePort, type RunningSvc, runSvc, startSvc, waitForHttp } from "../support/SvcProcess.ts"
import { startWebhookReceiver, type WebhookReceiver } from "../support/WebhookReceiver.ts"

interface Worker {
  readonly name: string
  readonly healthPort: number
  readonly process: RunningSvc
}

let workspace: ProductionWorkspace | undefined
let receiver: WebhookReceiver | undefined
let api: { readonly running: RunningSvc; readonly svc: Svc } | undefined
const workers: Array<Worker> = []

const alive = (w: Worker) => w.process.child.exitCode === null && w.process.child.signalCode === null

const logs = () =>
  [...workers.map((w) => [w.name, w.process] as const), ["api", api?.running] as const]
    .map(([name, p]) => `--- ${name}:\n${p?.output().slice(-3000) ?? ""}`)
    .join("\n")

const startWorker = async (): Promise<Worker> => {
  const name = `w${workers.length + 1}`
  const healthPort = await freePort()
  const runnerPort = await freePort()
  const process = startSvc(["serve", "--service", "worker"], {
    cwd: workspace!.dir,
    env: { SVC__worker__port: String(healthPort), SVC__cluster__runner__port: String(runnerPort) }
  })
  const worker = { name, healthPort, process }
  workers.push(worker)
  await waitForHttp(`http://127.0.0.1:${healthPort}/ping`, process, 60_000)
  return worker
}

/** The pid among `pids` that owns the TCP socket whose local port is `port` (Linux /proc). */
const ownerOfPort = async (port: number, pids: ReadonlyArray<number>): Promise<number | undefined> => {
  const inodes = new Set<string>()
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const text = await fs.readFile(table, "utf8").catch(() => "")
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/)
      const local = fields[1]
      if (local === undefined) continue
      if (Number.parseInt(local.split(":")[1] ?? "", 16) === port) inodes.add(fields[9] ?? "")
    }
  }
  for (const pid of pids) {
    const fds = await fs.readdir(`/proc/${pid}/fd`).catch(() => [] as Array<string>)
    for (const fd of fds) {
      const link = await fs.readlink(`/proc/${pid}/fd/${fd}`).catch(() => "")
      const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1]
      if (inode !== undefined && inodes.has(inode)) return pid
    }
  }
  return undefined
}

beforeAll(async () => {
  receiver = await startWebhookReceiver()
  workspace = await productionWorkspace("svc-e2e-webhooks-")
  await workspace.writeConfig([
    "outbound: { allow_private_networks: true }",
    "webhooks: { retry_schedule: [200ms, 200ms, 200ms, 200ms, 200ms], poll_interval: 100ms, timeout: 2s }"
  ])
  const migrated = await runSvc(["migrate"], { cwd: workspace.dir })
  expect(migrated.code, migrated.output).toBe(0)
  await startWorker()
  await startWorker()
  api = await startApiProcess(workspace.dir, await workspace.opsToken("2h"))
}, 180_000)

afterAll(async () => {
  await api?.running.stop()
  for (const w of workers) await w.process.stop()
  await receiver?.close()
  await workspace?.close()
})

describe("webhook delivery across workers", () => {
  it("loses nothing when the delivering worker is SIGKILLed mid-delivery; at most a duplicate", async () => {
    const svc = api!.svc
    const r = resources(svc)
    const ns = await r.freshNamespace("whprod")
    const hookPath = "/prod"
    const hook = expectStatus<{ id: string; secret: string }>(
      await svc.call("POST", "/api/v1/webhooks", {
        body: { namespace: ns, url: receiver!.url(hookPath), events: ["connection.created"] }
      }),
      201
    )
    receiver!.secret(hookPath, hook.secret)
    receiver!.delay(hookPath, 400)
    const connector = await r.publishedConnector(ns)
    const ids = await mapLimit(
      Array.from({ length: 40 }, (_, i) => i),
      8,
      async (i) => (await r.connection(connector.id, { name: `c${i}` })).id
    )

    // Mid-delivery: some answered, some held by the receiver right now.
    await eventually(
      async () => ({ done: receiver!.received(hookPath).length, held: receiver!.inFlight().length }),
      (state) => state.done >= 4 && state.held > 0,
      60_000
    )
    const held = receiver!.inFlight()
    const pids = workers.filter(alive).map((w) => w.process.child.pid as number)
    const sender = await ownerOfPort(held[0]?.remotePort ?? 0, pids)
    expect(sender, logs()).toBeDefined()
    const victim = workers.find((w) => w.process.child.pid === sender) as Worker
    process.kill(sender as number, "SIGKILL")
    const answeredBeforeKill = receiver!.received(hookPath).length
    console.log(`SIGKILLed ${victim.name} with ${held.length} attempts in flight, ${answeredBeforeKill} answered`)

    const delivered = await eventually(
      async () =>
        new Set(
          receiver!
            .received(hookPath)
            .filter((e) => e.status === 200)
            .map((e) => String(e.payload.data.connection_id))
        ),
      (set) => ids.every((id) => set.has(id)),
      90_000
    )
    expect([...delivered].sort(), logs()).toEqual([...ids].sort())
    const byMessage = new Map<string, number>()
    for (const event of receiver!.received(hookPath)) {
      expect(event.verifiedWith).toBe(0)
      byMessage.set(event.webhookId, (byMessage.get(event.webhookId) ?? 0) + 1)
    }
    expect(byMessage.size).toBe(40)
    expect(Math.max(...byMessage.values())).toBeLessThanOrEqual(2)
    const duplicates = [...byMessage.values()].filter((n) => n > 1).length
    console.log(`${duplicates} duplicate deliveries after the SIGKILL`)

    const log = await eventually(
      async () =>
        expectStatus<PageBody<{ state: string }>>(
          await svc.call<PageBody<{ state: string }>>("GET", `/api/v1/webhooks/${hook.id}/deliveries?limit=100`),
          200
        ),
      (page) => page.items.length === 40 && page.items.every((d) => d.state === "succeeded")
    )
    expect(log.items.every((d) => d.state === "succeeded")).toBe(true)
  }, 240_000)
})
