/**
 * SIGTERM while callers keep kept-alive sockets busy (issue 16 item 4), black-box: one
 * `svc serve --service api` on PostgreSQL, callers that each send `_proxy_raw` requests back to
 * back on one kept-alive socket, and slow requests in flight when the signal arrives. The process
 * stops taking requests on those sockets (`Connection: close`, then the socket is closed), lets
 * the in-flight requests finish, stores the request event of every answered request and exits 0
 * by itself while the callers are still trying. With a drain deadline shorter than a request, the
 * process cuts that request at the deadline and still exits 0.
 */
import { Effect } from "effect"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { caller, rand, resources, type Svc } from "../support/Api.ts"
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

/** Callers, each on one kept-alive socket of its own. */
const callers = 6
/** Requests in flight upstream when SIGTERM arrives. */
const slowCount = 4

let workspace: ProductionWorkspace | undefined
let upstream: http.Server | undefined
let upstreamPort = 0
/** Requests that reached the slow route, and the release of the ones waiting there. */
let slowArrived = 0
const slowWaiting: Array<() => void> = []
let token = ""
let connectionId = ""

interface Answer {
  readonly status: number
  readonly connection: string | undefined
  readonly body: string
}

/** One `_proxy_raw` GET through `agent`; rejects when the socket is refused or closed. */
const raw = (port: number, agent: http.Agent, upstreamPath: string): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: "127.0.0.1",
        port,
        path: `/api/v1/connections/${connectionId}/_proxy_raw`,
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          "x-svc-upstream-url": `http://127.0.0.1:${upstreamPort}${upstreamPath}`
        },
        timeout: 60_000
      },
      (response) => {
        let body = ""
        response.setEncoding("utf8")
        response.on("data", (chunk: string) => {
          body += chunk
        })
        response.on("end", () =>
          resolve({ status: response.statusCode ?? 0, connection: response.headers.connection, body })
        )
        response.on("error", reject)
      }
    )
    request.on("timeout", () => request.destroy(new Error("timeout")))
    request.on("error", reject)
    request.end()
  })

const eventCount = async (): Promise<number> => {
  const rows = await Effect.runPromise(
    workspace!.sql<{ n: string }>`SELECT count(*) AS n FROM request_events WHERE connection_id = ${connectionId}`
  )
  return Number(rows[0]?.n ?? -1)
}

const start = async (extra: ReadonlyArray<string>): Promise<{ running: RunningSvc; ports: Ports }> => {
  await fs.writeFile(
    path.join(workspace!.dir, "svc.yaml"),
    [...workspace!.baseConfig, "outbound: { allow_private_networks: true }", ...extra].join("\n")
  )
  const ports = await freePorts()
  const running = startSvc(["serve", "--service", "api"], { cwd: workspace!.dir, env: portEnv(ports) })
  await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, running, 60_000)
  return { running, ports }
}

const waitFor = async (done: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
  return done()
}

beforeAll(async () => {
  upstream = http.createServer((request, response) => {
    const answer = () => {
      response.writeHead(200, { "content-type": "text/plain" })
      response.end(`done ${request.url}`)
    }
    if (request.url?.startsWith("/slow") === true) {
      slowArrived++
      slowWaiting.push(answer)
    } else answer()
  })
  await new Promise<void>((resolve) => upstream!.listen(0, "127.0.0.1", resolve))
  upstreamPort = (upstream.address() as AddressInfo).port

  workspace = await productionWorkspace("svc-e2e-drain-")
  await workspace.writeConfig()
  const migrated = await runSvc(["migrate"], { cwd: workspace.dir })
  expect(migrated.code, migrated.output).toBe(0)
  token = await workspace.opsToken()

  const { running, ports } = await start([])
  try {
    const svc: Svc = {
      ports,
      adminToken: token,
      output: running.output,
      call: caller(ports, token),
      sign: async () => token,
      stop: async () => {
        await running.stop()
      }
    }
    const r = resources(svc)
    const ns = (await r.namespace(`root.drain${rand()}`)).path
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: { type: "api_key", placement: "bearer" },
        proxy: {
          allowed_hosts: [`127.0.0.1:${upstreamPort}`],
          allow_private_networks: true,
          max_concurrent_requests: 64
        }
      }
    })
    connectionId = (await r.connection(connector.id, { credentials: { api_key: "drain-key" } })).id
  } finally {
    expect(await running.stop()).toBe(0)
  }
}, 120_000)

afterAll(async () => {
  for (const release of slowWaiting.splice(0)) release()
  await new Promise((resolve) => upstream?.close(resolve))
  await workspace?.close()
}, 60_000)

describe("SIGTERM with busy kept-alive sockets", () => {
  it("closes the busy sockets, finishes in-flight requests, stores their events and exits 0", async () => {
    const { running, ports } = await start([])
    const eventsBefore = await eventCount()
    let exited = false
    let exitCode: number | null = null
    void running.exited.then((code) => {
      exited = true
      exitCode = code
    })
    try {
      // Slow requests in flight upstream, each on a socket of its own.
      const slowAgent = new http.Agent({ keepAlive: true, maxSockets: slowCount })
      const slow = Array.from({ length: slowCount }, (_, i) => raw(ports.api, slowAgent, `/slow/${i}`))
      // Callers looping on one kept-alive socket each until the process is gone.
      let signalled = false
      const loops = Array.from({ length: callers }, async () => {
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
        const tally = { before: 0, keptAliveAfterSignal: 0, closing: 0, afterClosing: 0, refused: 0 }
        while (!exited) {
          const wasSignalled = signalled
          try {
            const answer = await raw(ports.api, agent, "/fast")
            expect(answer.status, answer.body).toBe(200)
            if (tally.closing > 0) tally.afterClosing++
            if (answer.connection === "close") tally.closing++
            else if (wasSignalled) tally.keptAliveAfterSignal++
            else tally.before++
          } catch {
            // Refused or closed: the process no longer takes requests.
            tally.refused++
            await new Promise((resolve) => setTimeout(resolve, 20))
          }
        }
        agent.destroy()
        return tally
      })
      expect(await waitFor(() => slowArrived >= slowCount, 30_000), running.output()).toBe(true)
      await new Promise((resolve) => setTimeout(resolve, 300))

      const signalledAt = Date.now()
      signalled = true
      running.child.kill("SIGTERM")
      // The in-flight requests finish only once the process is draining.
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      for (const release of slowWaiting.splice(0)) release()
      const slowAnswers = await Promise.allSettled(slow)

      // Bounded: the process must exit by itself while the callers are still trying.
      expect(await waitFor(() => exited, 30_000), running.output().slice(-3000)).toBe(true)
      const drainMs = Date.now() - signalledAt
      const tallies = await Promise.all(loops)
      slowAgent.destroy()
      console.log(`exit ${drainMs} ms after SIGTERM; callers: ${JSON.stringify(tallies)}`)

      expect(exitCode, running.output().slice(-3000)).toBe(0)
      expect(running.output()).toContain("http: drained")
      expect(running.output()).toMatch(/request events: \d+ written, 0 dropped/)
      for (const answer of slowAnswers) {
        expect(answer.status).toBe("fulfilled")
        if (answer.status === "fulfilled") {
          expect(answer.value.status).toBe(200)
          expect(answer.value.body).toMatch(/^done \/slow\/\d$/)
          expect(answer.value.connection).toBe("close")
        }
      }
      for (const tally of tallies) {
        expect(tally.before).toBeGreaterThan(0)
        // Once draining, a socket carries at most one more answer (`Connection: close`), and
        // nothing is answered after it: the listener is closed too.
        expect(tally.closing).toBeLessThanOrEqual(1)
        expect(tally.afterClosing).toBe(0)
        expect(tally.refused).toBeGreaterThan(0)
      }
      const answered = slowCount + tallies.reduce((n, t) => n + t.before + t.keptAliveAfterSignal + t.closing, 0)
      expect(await eventCount()).toBe(eventsBefore + answered)
    } finally {
      await running.stop("SIGKILL")
    }
  }, 90_000)

  it("cuts a request still running at the drain deadline and exits 0", async () => {
    const { running, ports } = await start(["http: { drain_timeout: 1s }"])
    try {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
      const arrived = slowArrived
      const stuck = raw(ports.api, agent, "/slow/stuck").then(
        (answer) => answer.status,
        () => "cut"
      )
      expect(await waitFor(() => slowArrived > arrived, 30_000), running.output()).toBe(true)
      running.child.kill("SIGTERM")
      const code = await Promise.race([
        running.exited,
        new Promise<string>((resolve) => setTimeout(() => resolve("still running"), 20_000))
      ])
      expect(code, running.output().slice(-3000)).toBe(0)
      expect(await stuck).toBe("cut")
      agent.destroy()
      expect(running.output()).toContain("http: drain deadline of 1000 ms passed; 1 request(s) cut")
    } finally {
      for (const release of slowWaiting.splice(0)) release()
      await running.stop("SIGKILL")
    }
  }, 60_000)
})
