/**
 * The request path while PostgreSQL is unavailable (issue 16 item 4), black-box: one
 * `svc serve --service api` reaches the machine's PostgreSQL through a loopback relay the test
 * cuts (the shared server keeps running for other suites). For longer than the connection cache
 * lives, connections this process has proxied keep being proxied from their last known state
 * (stale-if-error), a connection it never resolved answers 503 `store_unavailable` with the
 * standard error body, and nothing answers 500. Once the relay is restored, the never-seen
 * connection is proxied and every request event of the outage reaches the database.
 */
import { Effect } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { caller, eventually, rand, resources, type Svc } from "../support/Api.ts"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import {
  freePorts,
  type Ports,
  portEnv,
  type RunningSvc,
  runSvc,
  startSvc,
  waitForHttp
} from "../support/SvcProcess.ts"
import { startTcpRelay, type TcpRelay } from "../support/TcpRelay.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

/** How long the outage lasts: longer than the 5 s the connection cache keeps an entry. */
const outageMs = 8_000

let workspace: ProductionWorkspace | undefined
let relay: TcpRelay | undefined
let upstream: Upstream | undefined
let api: RunningSvc | undefined
let ports: Ports
let token = ""
const seen: Array<string> = []
let unseen = ""

const svc = (): Svc => ({
  ports,
  adminToken: token,
  output: () => api?.output() ?? "",
  call: caller(ports, token),
  sign: async () => token,
  stop: async () => {
    await api?.stop()
  }
})

interface Answer {
  readonly status: number
  readonly text: string
}

const raw = async (connectionId: string): Promise<Answer> => {
  const response = await fetch(`http://127.0.0.1:${ports.api}/api/v1/connections/${connectionId}/_proxy_raw`, {
    headers: { authorization: `Bearer ${token}`, "x-svc-upstream-url": `${upstream!.origin}/ok` },
    signal: AbortSignal.timeout(30_000)
  })
  return { status: response.status, text: await response.text() }
}

const envelope = async (connectionId: string): Promise<Answer> => {
  const response = await fetch(`http://127.0.0.1:${ports.api}/api/v1/connections/${connectionId}/_proxy`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ method: "GET", url: `${upstream!.origin}/ok` }),
    signal: AbortSignal.timeout(30_000)
  })
  return { status: response.status, text: await response.text() }
}

/** Request events of a connection, counted in the database (the list API pages at 1000). */
const eventCount = async (connectionId: string): Promise<number> => {
  const rows = await Effect.runPromise(
    workspace!.sql<{ n: string }>`SELECT count(*) AS n FROM request_events WHERE connection_id = ${connectionId}`
  )
  return Number(rows[0]?.n ?? -1)
}

/** Upstream answers (the recorder keeps only the last 1000 requests). */
let upstreamHits = 0

beforeAll(async () => {
  upstream = await startUpstream()
  upstream.route("/ok", () => {
    upstreamHits++
    return { status: 200, headers: { "content-type": "application/json" }, body: '{"ok":true}' }
  })
  relay = await startTcpRelay(5432)
  workspace = await productionWorkspace("svc-e2e-outage-")
  const viaRelay = new URL(workspace.url)
  viaRelay.port = String(relay.port)
  await fs.writeFile(
    path.join(workspace.dir, "svc.yaml"),
    [
      ...workspace.baseConfig.filter((line) => !line.startsWith("database:")),
      `database: { provider: postgres, url: "${viaRelay.toString()}", max_connections: 4 }`,
      "outbound: { allow_private_networks: true }"
    ].join("\n")
  )
  const migrated = await runSvc(["migrate"], { cwd: workspace.dir })
  expect(migrated.code, migrated.output).toBe(0)
  ports = await freePorts()
  api = startSvc(["serve", "--service", "api"], { cwd: workspace.dir, env: portEnv(ports) })
  await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, api, 60_000)
  token = await workspace.opsToken()
  const r = resources(svc())
  const ns = (await r.namespace(`root.outage${rand()}`)).path
  const connector = await r.publishedConnector(ns, {
    definition: {
      type: "demo",
      auth: { type: "api_key", placement: "bearer" },
      proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
    }
  })
  for (let i = 0; i < 4; i++) {
    seen.push((await r.connection(connector.id, { credentials: { api_key: `key-${i}` } })).id)
  }
  unseen = (await r.connection(connector.id, { credentials: { api_key: "key-unseen" } })).id
}, 120_000)

afterAll(async () => {
  relay?.restore()
  await api?.stop("SIGKILL")
  await relay?.close()
  await upstream?.close()
  await workspace?.close()
}, 60_000)

describe("PostgreSQL unavailable", () => {
  it("proxies connections already seen from their last known state; a never-seen one is 503 store_unavailable", async () => {
    for (const id of seen) expect((await raw(id)).status, api?.output()).toBe(200)
    const before = upstreamHits

    relay!.cut()
    const statuses = new Map<string, number>()
    const count = (key: string) => statuses.set(key, (statuses.get(key) ?? 0) + 1)
    const unseenBodies: Array<string> = []
    let served = 0
    const started = Date.now()
    try {
      while (Date.now() - started < outageMs) {
        const round = await Promise.all([
          ...seen.map((id) => raw(id)),
          ...seen.map((id) => envelope(id)),
          raw(unseen),
          envelope(unseen)
        ])
        const unseenAnswers = round.slice(seen.length * 2)
        for (const answer of round.slice(0, seen.length * 2)) {
          count(`seen ${answer.status}`)
          if (answer.status === 200) served++
        }
        for (const answer of unseenAnswers) {
          count(`unseen ${answer.status}`)
          unseenBodies.push(answer.text)
        }
      }
    } finally {
      relay!.restore()
    }
    const summary = Object.fromEntries([...statuses.entries()].sort())
    console.log(`during a ${outageMs} ms outage: ${JSON.stringify(summary)}`)

    const seenTotal = [...statuses.entries()].filter(([k]) => k.startsWith("seen ")).reduce((n, [, v]) => n + v, 0)
    expect(seenTotal).toBeGreaterThan(seen.length * 4)
    expect(summary, api?.output().slice(-4000)).toEqual({ "seen 200": seenTotal, "unseen 503": unseenBodies.length })
    for (const text of unseenBodies) {
      const body = JSON.parse(text) as Record<string, unknown>
      expect(Object.keys(body).sort()).toEqual(["code", "error"])
      expect(body.code).toBe("store_unavailable")
      expect(typeof body.error).toBe("string")
    }
    // Every 200 was a real upstream answer.
    expect(upstreamHits - before).toBe(served)

    // Back: the connection never seen resolves, and no request event of the outage is lost.
    const after = await eventually(
      () => raw(unseen),
      (answer) => answer.status === 200,
      30_000
    )
    expect(after.status, after.text).toBe(200)
    const expected = new Map(seen.map((id) => [id, 1 + served / seen.length]))
    for (const [id, want] of expected) {
      const got = await eventually(
        () => eventCount(id),
        (n) => n >= want,
        45_000
      )
      expect(got, `events of ${id}`).toBe(want)
    }
  }, 120_000)
})
