/**
 * The webhooks group (issue 34): webhook delivery on PostgreSQL. A fresh database
 * (`svc_bench_webhooks_<random>`, dropped at the end), `svc migrate`, one worker (runs the delivery
 * singleton) and one api process. First the cost on the state changes that emit events: N
 * connections created through the api (16 in flight) with no endpoint at all (the outbox triggers
 * write nothing), then N more in a namespace with a matching endpoint (each create writes two outbox
 * rows: `connection.created` and `connection.configured`). Then deliveries per second to a loopback
 * receiver that answers 200 at once: from the first to the last of the 2N deliveries, and from the
 * last create to the last delivery. Each run is checked: every event arrives once with a valid
 * signature (the `standardwebhooks` package). Skipped with a reason when PostgreSQL is unreachable.
 */
import { randomBytes } from "node:crypto"
import type { RunningSvc } from "../support/SvcProcess.ts"
import { startWebhookReceiver } from "../support/WebhookReceiver.ts"
import { createDatabase, DatabaseUnavailable } from "./Cluster.ts"
import { opsApi, opsWorkspace, startOpsCluster } from "./OpsApi.ts"
import { nowMs } from "./Ready.ts"

/** Seconds the group may take at most (measured: ~25-40 s with the defaults). */
export const webhooksBudgetS = 150

const createConcurrency = 16

export interface WebhooksOptions {
  readonly quick: boolean
  readonly progress: (message: string) => void
}

export interface CreateCost {
  readonly label: string
  readonly connections: number
  readonly ms: number
  readonly perSecond: number
  readonly p50Ms: number
  readonly p99Ms: number
}

export interface WebhooksReport {
  readonly title: string
  readonly skipped?: string
  readonly creates: ReadonlyArray<CreateCost>
  readonly delivery?: {
    readonly deliveries: number
    /** From the first delivery received to the last. */
    readonly spanMs: number
    readonly perSecond: number
    /** From the last create's answer to the last delivery. */
    readonly drainMs: number
    readonly verified: number
    readonly duplicates: number
  }
  readonly ms: number
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

export const measureWebhooks = async (options: WebhooksOptions): Promise<WebhooksReport> => {
  const { progress, quick } = options
  const count = quick ? 200 : 1_000
  const t0 = nowMs()
  const title = `webhooks on PostgreSQL: connection creates with/without an endpoint, deliveries/s to a loopback receiver (1 worker, 1 api process)`
  const creates: Array<CreateCost> = []
  let delivery: WebhooksReport["delivery"]
  const report = (skipped?: string): WebhooksReport => ({
    title,
    ...(skipped === undefined ? {} : { skipped }),
    creates,
    ...(delivery === undefined ? {} : { delivery }),
    ms: nowMs() - t0
  })
  let database: Awaited<ReturnType<typeof createDatabase>>
  try {
    database = await createDatabase("svc_bench_webhooks_")
  } catch (error) {
    const reason = error instanceof DatabaseUnavailable ? error.message : `failed: ${describe(error)}`
    progress(`${title}: skipped (${reason})`)
    return report(reason)
  }
  const processes: Array<RunningSvc> = []
  const receiver = await startWebhookReceiver()
  try {
    const { dir, secret } = await opsWorkspace(
      "svc-bench-webhooks-",
      [
        `database: { provider: postgres, url: "${database.url}", max_connections: 8 }`,
        "outbound: { allow_private_networks: true }",
        "webhooks: { poll_interval: 100ms }"
      ],
      30_000
    )
    const origin = await startOpsCluster(dir, processes)
    const { call, expect } = await opsApi(origin, secret, 30_000)

    const connectorIn = async (ns: string) => {
      await expect(call("POST", "/api/v1/namespaces", { path: ns }), 201, "create the namespace")
      const connector = await expect<{ id: string }>(
        call("POST", "/api/v1/connectors", { namespace: ns, definition: { type: "demo", auth: { type: "none" } } }),
        201,
        "create the connector"
      )
      await expect(
        call("PUT", `/api/v1/connectors/${connector.id}/versions/1/_state`, { state: "primary" }),
        200,
        "publish the connector"
      )
      return connector.id
    }
    const createMany = async (label: string, connectorId: string): Promise<CreateCost> => {
      const latencies: Array<number> = []
      let next = 0
      const started = nowMs()
      await Promise.all(
        Array.from({ length: createConcurrency }, async () => {
          while (next < count) {
            next++
            const one = nowMs()
            await expect(call("POST", "/api/v1/connections", { connectorId }), 201, "create a connection")
            latencies.push(nowMs() - one)
          }
        })
      )
      const ms = nowMs() - started
      latencies.sort((a, b) => a - b)
      const cost = {
        label,
        connections: count,
        ms,
        perSecond: (count * 1000) / ms,
        p50Ms: percentile(latencies, 50),
        p99Ms: percentile(latencies, 99)
      }
      progress(`  ${label}: ${cost.perSecond.toFixed(0)} creates/s, p50 ${cost.p50Ms.toFixed(1)} ms`)
      return cost
    }

    // Warm-up: the first creates pay for connection pools and caches.
    const warm = await connectorIn(`root.whwarm${randomBytes(3).toString("hex")}`)
    for (let i = 0; i < 50; i++)
      await expect(call("POST", "/api/v1/connections", { connectorId: warm }), 201, "warm-up")

    creates.push(await createMany("no endpoint", await connectorIn(`root.whnone${randomBytes(3).toString("hex")}`)))
    const ns = `root.whbench${randomBytes(3).toString("hex")}`
    const connectorId = await connectorIn(ns)
    const hook = await expect<{ id: string; secret: string }>(
      call("POST", "/api/v1/webhooks", { namespace: ns, url: receiver.url("/bench") }),
      201,
      "create the endpoint"
    )
    receiver.secret("/bench", hook.secret)
    creates.push(await createMany("matching endpoint", connectorId))
    const lastCreate = performance.now()
    const wanted = 2 * count
    const deadline = nowMs() + 90_000
    while (receiver.received("/bench").length < wanted && nowMs() < deadline) await sleep(50)
    const got = receiver.received("/bench")
    if (got.length < wanted) return report(`failed: ${got.length} of ${wanted} deliveries within 90 s`)
    const times = got.map((e) => e.receivedAtMs).sort((a, b) => a - b)
    const spanMs = (times[times.length - 1] ?? 0) - (times[0] ?? 0)
    const ids = new Set(got.map((e) => e.webhookId))
    delivery = {
      deliveries: got.length,
      spanMs,
      perSecond: (got.length * 1000) / Math.max(1, spanMs),
      drainMs: (times[times.length - 1] ?? 0) - lastCreate,
      verified: got.filter((e) => e.verifiedWith === 0).length,
      duplicates: got.length - ids.size
    }
    progress(`  ${delivery.deliveries} deliveries, ${delivery.perSecond.toFixed(0)}/s`)
    if (delivery.verified !== got.length)
      return report(`failed: ${got.length - delivery.verified} signatures did not verify`)
    return report()
  } catch (error) {
    const reason = `failed: ${describe(error)}`
    progress(`${title}: ${reason}`)
    return report(reason)
  } finally {
    await Promise.all(processes.map((p) => p.stop("SIGKILL")))
    await receiver.close()
    await database.drop().catch((error: unknown) => progress(`dropping ${database.name}: ${describe(error)}`))
  }
}

/** The group's lines of the printed table. */
export const formatWebhooks = (report: WebhooksReport): ReadonlyArray<string> => {
  const out = ["", report.title]
  if (report.creates.length > 0) {
    out.push(
      `    ${"connection create".padEnd(20)}${"count".padStart(7)}${"creates/s".padStart(11)}${"p50 ms".padStart(9)}${"p99 ms".padStart(9)}`
    )
    for (const c of report.creates) {
      out.push(
        `    ${c.label.padEnd(20)}${String(c.connections).padStart(7)}${c.perSecond.toFixed(0).padStart(11)}` +
          `${c.p50Ms.toFixed(1).padStart(9)}${c.p99Ms.toFixed(1).padStart(9)}`
      )
    }
  }
  const d = report.delivery
  if (d !== undefined) {
    out.push(
      `    deliveries ${d.deliveries} (verified ${d.verified}, duplicates ${d.duplicates}): ` +
        `${d.perSecond.toFixed(0)}/s over ${(d.spanMs / 1000).toFixed(1)} s; last delivery ` +
        `${(d.drainMs / 1000).toFixed(1)} s after the last create`
    )
  }
  if (report.skipped !== undefined) out.push(`  ${report.skipped.split("\n")[0]?.slice(0, 160) ?? ""}`)
  return out
}
