/**
 * Cache invalidation across processes (docs/cluster.md "Cache invalidation across processes"; spec
 * 2.4 rule 5, 3.1), on PostgreSQL and Redis with real processes: one worker and two `svc serve
 * --service api` processes, A and B, each with its own proxy cache. B's cache is warm (it proxied
 * through the connections just before); then
 * - a disconnect-all started and polled through A: as soon as A reports `completed`, a proxy call
 *   through B answers 404 `not_found` (never 200 with the erased credential), and the upstream sees
 *   no request after the completion;
 * - a namespace label change propagated by the worker: as soon as A shows the connection's row
 *   rewritten, the next request through B records the new label in its request event.
 * Loopback only, bounded in time; processes and the database are cleaned up.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  eventually,
  expectError,
  expectStatus,
  rand,
  resources,
  startApiProcess,
  type Svc,
  type TaskBody
} from "../support/Api.ts"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import { freePort, type RunningSvc, runSvc, startSvc, waitForHttp } from "../support/SvcProcess.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

interface EventBody {
  readonly id: string
  readonly connection_id: string
  readonly labels: Record<string, string>
}

let workspace: ProductionWorkspace | undefined
let upstream: Upstream | undefined
let worker: RunningSvc | undefined
let a: { running: RunningSvc; svc: Svc } | undefined
let b: { running: RunningSvc; svc: Svc } | undefined

const logs = () =>
  [
    ["worker", worker],
    ["api A", a?.running],
    ["api B", b?.running]
  ]
    .map(([name, p]) => `--- ${name as string}:\n${(p as RunningSvc | undefined)?.output().slice(-3000) ?? ""}`)
    .join("\n")

const secret = (i: number) => `cache-secret-${i}-${rand()}`

/** A connector whose connections inject an API key as a bearer token, reaching the test's upstream. */
const connectorOf = async (ns: string) =>
  resources(a!.svc).publishedConnector(ns, {
    definition: {
      type: "demo",
      auth: { type: "api_key", placement: "bearer" },
      proxy: { allowed_hosts: [`127.0.0.1:${upstream!.port}`], allow_private_networks: true }
    }
  })

const proxy = (via: Svc, id: string, labels: Record<string, string> = {}) =>
  via.call("POST", `/api/v1/connections/${id}/_proxy`, {
    body: { url: `${upstream!.origin}/ok`, method: "GET", labels }
  })

beforeAll(async () => {
  upstream = await startUpstream()
  upstream.route("/ok", () => ({ status: 200, headers: { "content-type": "application/json" }, body: '{"ok":true}' }))
  workspace = await productionWorkspace("svc-e2e-invalidate-")
  await workspace.writeConfig(["outbound: { allow_private_networks: true }"])
  const migrated = await runSvc(["migrate"], { cwd: workspace.dir })
  expect(migrated.code, migrated.output).toBe(0)
  const token = await workspace.opsToken("2h")
  const healthPort = await freePort()
  worker = startSvc(["serve", "--service", "worker"], {
    cwd: workspace.dir,
    env: { SVC__worker__port: String(healthPort), SVC__cluster__runner__port: String(await freePort()) }
  })
  await waitForHttp(`http://127.0.0.1:${healthPort}/ping`, worker, 60_000)
  a = await startApiProcess(workspace.dir, token)
  b = await startApiProcess(workspace.dir, token)
}, 180_000)

afterAll(async () => {
  await Promise.all([worker?.stop("SIGKILL"), a?.running.stop("SIGKILL"), b?.running.stop("SIGKILL")])
  await upstream?.close()
  await workspace?.close()
}, 60_000)

describe("a disconnect-all reaches every api process's cache before it reports completed", () => {
  it("B answers 404 at once after A reports completed, never 200 with the erased credential", async () => {
    const r = resources(a!.svc)
    const ns = await r.freshNamespace("inv")
    const connector = await connectorOf(ns)
    const secrets = [0, 1, 2].map(secret)
    const ids = await Promise.all(
      secrets.map(async (key) => (await r.connection(connector.id, { credentials: { api_key: key } })).id)
    )
    // B's cache holds every connection (the second call takes the fast path).
    for (const id of ids) for (let i = 0; i < 2; i++) expectStatus(await proxy(b!.svc, id), 200)
    expect(upstream!.seen().filter((s) => secrets.some((k) => s.headers.authorization === `Bearer ${k}`))).toHaveLength(
      6
    )

    const started = expectStatus<{ taskId: string }>(
      await a!.svc.call("POST", `/api/v1/connectors/${connector.id}/_disconnectAll`, { body: { timeoutSeconds: 60 } }),
      202
    )
    const done = await eventually(
      async () => expectStatus<TaskBody>(await a!.svc.call("GET", `/api/v1/tasks/${started.taskId}`), 200),
      (task) => task.state !== "active",
      60_000
    )
    expect(done.state, logs()).toBe("completed")
    const seenAtDone = upstream!.seen().length
    for (const id of ids) expectError(await proxy(b!.svc, id), 404, "not_found")
    expect(upstream!.seen().length).toBe(seenAtDone)
  }, 120_000)
})

describe("a propagated label change reaches request snapshots on every api process (spec 2.4 rule 5)", () => {
  it("the first request through B after A shows the row rewritten records the new label", async () => {
    const r = resources(a!.svc)
    const ns = await r.freshNamespace("invl", { labels: { stage: "before" } })
    const connector = await connectorOf(ns)
    const connection = await r.connection(connector.id, { credentials: { api_key: secret(9) } })
    expect(connection.labels["svc/ns/stage"]).toBe("before")
    for (let i = 0; i < 2; i++) expectStatus(await proxy(b!.svc, connection.id), 200)

    expectStatus(await a!.svc.call("PUT", `/api/v1/namespaces/${ns}/labels/stage`, { body: { value: "after" } }), 200)
    const rewritten = await eventually(
      async () => (await r.get("connections", connection.id)).labels,
      (labels) => labels["svc/ns/stage"] === "after",
      30_000
    )
    expect(rewritten["svc/ns/stage"], logs()).toBe("after")
    const marker = rand()
    expectStatus(await proxy(b!.svc, connection.id, { probe: marker }), 200)

    const events = await eventually(
      async () =>
        expectStatus<{ items: Array<EventBody> }>(
          await a!.svc.call(
            "GET",
            `/api/v1/metrics/request-events?${new URLSearchParams({ connectionId: connection.id, labelSelector: `probe=${marker}` })}`
          ),
          200
        ).items,
      (items) => items.length > 0,
      30_000
    )
    expect(events).toHaveLength(1)
    expect(events[0]?.labels["svc/ns/stage"]).toBe("after")
  }, 120_000)
})
