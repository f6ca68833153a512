/**
 * Redis Cluster as the counter store, black-box (API-CONVENTIONS "Production infrastructure"): a
 * private cluster of three masters with a replica each, one `svc serve --service worker` and two
 * `svc serve --service api --service public` processes (A and B) on one fresh PostgreSQL database,
 * every process seeded with all six nodes. A limit of 5 admits exactly 5 of 20 requests spread over
 * A and B; a cool-down seen by A holds in B; a marketplace login works (its nonce and session keys
 * live on other masters than the rate-limit slot) and its link is single-use across processes;
 * with the master of the rate-limit slot SIGKILLed every request still answers within 5 s, never
 * a 500 (fail-open), and once its replica is promoted limits apply again and `/healthz` is ok.
 */
import { randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { SignJWT } from "jose"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  caller,
  eventually,
  expectStatus,
  mapLimit,
  type RateLimitBody,
  rand,
  resources,
  type Svc
} from "../support/Api.ts"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import { type RedisCluster, startRedisCluster } from "../support/RedisCluster.ts"
import {
  freePorts,
  type Ports,
  portEnv,
  type RunningSvc,
  runSvc,
  startSvc,
  waitForHttp
} from "../support/SvcProcess.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

interface ApiProcess {
  readonly name: string
  readonly ports: Ports
  readonly running: RunningSvc
}

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly ms: number
}

const keyPrefix = `svc-e2e-rcluster-${randomUUID()}:`

/** The fail-open warning of `RequestLimiter` (logged at most once a minute per process). */
const failOpenWarning = "the rate-limit store failed; requests go through unchecked"

let cluster: RedisCluster | undefined
let workspace: ProductionWorkspace | undefined
let upstream: Upstream | undefined
let worker: RunningSvc | undefined
let workerPorts: Ports | undefined
let a: ApiProcess | undefined
let b: ApiProcess | undefined
let token = ""

const fixture = {
  limited: { connectionId: "", ruleId: "" },
  cooled: { connectionId: "" },
  open: { connectionId: "" },
  after: { connectionId: "", ruleId: "" }
}

const hits = new Map<string, number>()
const hit = (prefix: string) => hits.get(prefix) ?? 0

const logs = () =>
  [
    ["worker", worker],
    ["api A", a?.running],
    ["api B", b?.running]
  ]
    .map(([name, p]) => `--- ${name}:\n${(p as RunningSvc | undefined)?.output().slice(-4000) ?? ""}`)
    .join("\n")

const startApi = async (name: string, dir: string): Promise<ApiProcess> => {
  const ports = await freePorts()
  const running = startSvc(["serve", "--service", "api", "--service", "public"], { cwd: dir, env: portEnv(ports) })
  await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, running, 60_000)
  return { name, ports, running }
}

const svcOf = (p: ApiProcess): Svc => ({
  ports: p.ports,
  adminToken: token,
  output: p.running.output,
  call: caller(p.ports, token),
  sign: async () => token,
  stop: async () => {
    await p.running.stop()
  }
})

/** A request bounded to 5 s: a hang is an answer with status -1. */
const bounded = async (url: string, init: RequestInit = {}): Promise<Answer> => {
  const started = Date.now()
  try {
    const response = await fetch(url, { ...init, signal: AbortSignal.timeout(5_000), redirect: "manual" })
    return { status: response.status, headers: response.headers, text: await response.text(), ms: Date.now() - started }
  } catch (error) {
    return { status: -1, headers: new Headers(), text: String(error), ms: Date.now() - started }
  }
}

/** `_proxy_raw` GET of `upstreamPath` through `p`. */
const raw = (p: ApiProcess, connectionId: string, upstreamPath: string) =>
  bounded(`http://127.0.0.1:${p.ports.api}/api/v1/connections/${connectionId}/_proxy_raw`, {
    headers: { authorization: `Bearer ${token}`, "x-svc-upstream-url": `${upstream!.origin}${upstreamPath}` }
  })

const healthz = async (p: ApiProcess) => {
  const answer = await bounded(`http://127.0.0.1:${p.ports.api}/healthz`)
  return answer.status === -1 ? undefined : (JSON.parse(answer.text) as { checks: Record<string, { status: string }> })
}

/** A marketplace login URL of the `ops` actor (HS256, audience public, single-use nonce, 5 minutes). */
const loginUrl = async (p: ApiProcess, nonce = randomUUID()) => {
  const login = await new SignJWT({ nonce })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject("ops")
    .setAudience(["public"])
    .setIssuedAt()
    .setExpirationTime("5m")
    .sign(workspace!.secret)
  return `http://127.0.0.1:${p.ports.public}/marketplace/login?token=${login}`
}

const cookiesOf = (answer: Answer) =>
  answer.headers
    .getSetCookie()
    .map((cookie) => cookie.split(";")[0]!)
    .join("; ")

/** The masters holding at least one key of this suite. */
const mastersWithKeys = async () => {
  const lines = await cluster!.topology()
  const masters = lines.filter((line) => line.flags.includes("master") && !line.flags.some((f) => f.startsWith("fail")))
  const counts = await Promise.all(
    masters.map(async (line) => {
      const keys = await cluster!.command(line.port, "--scan", "--pattern", `${keyPrefix}*`)
      return [line.port, keys.split("\n").filter((key) => key !== "")] as const
    })
  )
  return new Map(counts.filter(([, keys]) => keys.length > 0))
}

beforeAll(async () => {
  cluster = await startRedisCluster()
  upstream = await startUpstream()
  const counted = (prefix: string, status: number, headers: Record<string, string>, body: string) =>
    upstream!.route(prefix, () => {
      hits.set(prefix, hit(prefix) + 1)
      return { status, headers, body }
    })
  const json = { "content-type": "application/json" }
  counted("/limit", 200, json, '{"ok":true}')
  counted("/again", 200, json, '{"ok":true}')
  counted("/cool/slow", 429, { "retry-after": "30", "content-type": "text/plain" }, "slow down")
  counted("/cool/ok", 200, json, '{"ok":true}')
  counted("/open", 200, json, '{"ok":true}')
  counted("/warm", 200, json, '{"ok":true}')

  workspace = await productionWorkspace("svc-e2e-rcluster-")
  const dir = workspace.dir
  await fs.writeFile(
    path.join(dir, "svc.yaml"),
    [
      ...workspace.baseConfig.filter((line) => !line.startsWith("counter_store:")),
      "counter_store:",
      "  provider: redis-cluster",
      `  nodes: [${cluster.seeds.map((seed) => `"${seed}"`).join(", ")}]`,
      `  key_prefix: "${keyPrefix}"`,
      "outbound: { allow_private_networks: true }",
      "rate_limits: { refresh_interval: 5s }"
    ].join("\n")
  )
  const migrated = await runSvc(["migrate"], { cwd: dir })
  expect(migrated.code, migrated.output).toBe(0)

  workerPorts = await freePorts()
  worker = startSvc(["serve", "--service", "worker"], { cwd: dir, env: portEnv(workerPorts) })
  await waitForHttp(`http://127.0.0.1:${workerPorts.worker}/ping`, worker, 60_000)
  const ready = await eventually(
    () => fetch(`http://127.0.0.1:${workerPorts!.worker}/healthz`).then((r) => r.status),
    (status) => status === 200,
    45_000
  )
  expect(ready, logs()).toBe(200)

  a = await startApi("A", dir)
  token = await workspace.opsToken()
  const r = resources(svcOf(a))
  const parent = (await r.namespace(`root.rcluster${rand()}`)).path
  const setup = async (name: string) => {
    const ns = (await r.namespace(`${parent}.${name}`)).path
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: { type: "api_key", placement: "bearer" },
        proxy: {
          allowed_hosts: [`127.0.0.1:${upstream!.port}`],
          allow_private_networks: true,
          max_concurrent_requests: 256
        }
      }
    })
    const connection = await r.connection(connector.id, { credentials: { api_key: `key-${name}` } })
    return { ns, connectionId: connection.id }
  }
  const rule = async (namespace: string, prefix: string) =>
    expectStatus<RateLimitBody>(
      await caller(a!.ports, token)("POST", "/api/v1/rate-limits", {
        body: {
          namespace,
          definition: {
            selector: { path_match: { kind: "prefix", value: prefix } },
            bucket: { dimensions: ["connection"] },
            // 5 tokens and far less than one more during the suite: the limit cannot roll over
            algorithm: { token_bucket: { capacity: 5, refill_rate: 0.0001 } }
          }
        }
      }),
      201
    ).id
  const limited = await setup("limited")
  fixture.limited = { connectionId: limited.connectionId, ruleId: await rule(limited.ns, "/limit") }
  fixture.cooled = { connectionId: (await setup("cooled")).connectionId }
  fixture.open = { connectionId: (await setup("open")).connectionId }
  const after = await setup("after")
  fixture.after = { connectionId: after.connectionId, ruleId: await rule(after.ns, "/again") }
  b = await startApi("B", dir)
}, 180_000)

afterAll(async () => {
  await Promise.all([a?.running, b?.running, worker].map((p) => p?.stop("SIGKILL")))
  await cluster?.stop()
  await upstream?.close()
  await workspace?.close()
}, 60_000)

describe("Redis Cluster as the counter store (3 masters + 3 replicas, two api processes and a worker)", () => {
  it("/healthz reports the cluster as counterStore: ok", async () => {
    for (const p of [a!, b!]) expect((await healthz(p))?.checks.counterStore).toEqual({ status: "ok" })
  })

  it("a limit of 5 admits exactly 5 of 20 requests spread over A and B", async () => {
    const { connectionId, ruleId } = fixture.limited
    for (const p of [a!, b!]) expect((await raw(p, connectionId, "/warm")).status).toBe(200)
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => raw(i % 2 === 0 ? a! : b!, connectionId, `/limit/${i}`))
    )
    const admitted = answers.filter((answer) => answer.status === 200)
    const rejected = answers.filter((answer) => answer.status === 429)
    expect(admitted.length, logs()).toBe(5)
    expect(rejected.length).toBe(15)
    for (const answer of rejected) {
      expect(answer.headers.get("x-svc-ratelimited")).toBe("true")
      expect(answer.headers.get("x-svc-ratelimit")).toBe(ruleId)
    }
    expect(hit("/limit")).toBe(5)
    // every rate-limit key of the suite is on the master owning the {rl} slot
    const owner = await cluster!.masterOf(`${keyPrefix}rate-limit:{rl}:x`)
    const bucketKeys = [...(await mastersWithKeys())].flatMap(([port, keys]) =>
      keys.filter((key) => key.includes("{rl}")).map(() => port)
    )
    expect(bucketKeys.length).toBeGreaterThan(0)
    expect(new Set(bucketKeys)).toEqual(new Set([owner]))
  }, 60_000)

  it("a cool-down seen by A holds in B, without B calling the upstream", async () => {
    const { connectionId } = fixture.cooled
    const first = await raw(a!, connectionId, "/cool/slow")
    expect(first.status, first.text).toBe(429)
    expect(first.headers.get("x-svc-ratelimited")).toBeNull()
    const key = `${keyPrefix}cool-down:{rl}:${connectionId}`
    const ttl = await eventually(
      async () => Number(await cluster!.command(await cluster!.masterOf(key), "PTTL", key)),
      (left) => left > 0,
      15_000
    )
    expect(ttl, logs()).toBeGreaterThan(0)
    const fromB = await raw(b!, connectionId, "/cool/ok")
    expect(fromB.status, fromB.text).toBe(429)
    expect(fromB.headers.get("x-svc-ratelimited")).toBe("true")
    expect(JSON.parse(fromB.text).rate_limit_id).toBeNull()
    expect(hit("/cool/ok")).toBe(0)
    expect(hit("/cool/slow")).toBe(1)
  }, 60_000)

  it("a marketplace login works with its keys on other masters, and its link is single-use across A and B", async () => {
    const url = await loginUrl(a!)
    const login = await bounded(url)
    expect(login.status, `${login.text}\n${logs()}`).toBe(200)
    const cookies = cookiesOf(login)
    expect(cookies).toContain("svc_session=")
    const session = await bounded(`http://127.0.0.1:${a!.ports.public}/marketplace/session`, {
      headers: { cookie: cookies }
    })
    expect(session.status, session.text).toBe(200)
    expect(JSON.parse(session.text).externalId).toBe("ops")
    // the same link through the other process: the nonce was claimed once, for every process
    const replay = await bounded(url.replace(`:${a!.ports.public}/`, `:${b!.ports.public}/`))
    expect(replay.status, replay.text).toBe(401)
    expect(replay.headers.getSetCookie()).toEqual([])
    // the suite's keys live on more than one master (nonces and sessions outside the {rl} slot).
    // A nonce's and a session's slots follow their random ids, so one login's two keys land on the
    // {rl} master together one time in nine: log in again (each a working login) until a key lands
    // elsewhere, at most 8 logins (all 16 keys on one master: about 1 in 43 million).
    const rlOwner = await cluster!.masterOf(`${keyPrefix}rate-limit:{rl}:x`)
    let byMaster = await mastersWithKeys()
    const elsewhereOf = () => [...byMaster].filter(([port]) => port !== rlOwner).flatMap(([, keys]) => keys)
    for (let logins = 1; elsewhereOf().length === 0 && logins < 8; logins++) {
      const again = await bounded(await loginUrl(a!))
      expect(again.status, again.text).toBe(200)
      byMaster = await mastersWithKeys()
    }
    const elsewhere = elsewhereOf()
    expect(elsewhere.length, JSON.stringify([...byMaster])).toBeGreaterThan(0)
    expect(elsewhere.every((key) => !key.includes("{rl}"))).toBe(true)
  }, 60_000)

  it("the rate-limit slot's master SIGKILLed: every request answers within 5 s, never a 500; after the failover limits apply again", async () => {
    const owner = await cluster!.masterOf(`${keyPrefix}rate-limit:{rl}:x`)
    const killedAt = Date.now()
    await cluster!.nodes.find((node) => node.port === owner)!.kill()

    // while the replica takes over (cluster-node-timeout 1.5 s): proxied requests fail open, logins
    // answer (a session or 503), /healthz answers; nothing hangs, nothing is a 500
    const answers = await mapLimit(
      Array.from({ length: 60 }, (_, i) => i),
      6,
      async (i): Promise<Answer> => {
        const p = i % 2 === 0 ? a! : b!
        if (i % 10 === 9) return bounded(await loginUrl(p))
        if (i % 10 === 4) return bounded(`http://127.0.0.1:${p.ports.api}/healthz`)
        return raw(p, fixture.open.connectionId, `/open/${i}`)
      }
    )
    const statuses = new Map<number, number>()
    for (const answer of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
    console.log(
      `60 requests after the kill in ${Date.now() - killedAt} ms; statuses ${JSON.stringify([...statuses])}; ` +
        `slowest ${Math.max(...answers.map((answer) => answer.ms))} ms`
    )
    for (const [i, answer] of answers.entries()) {
      const what = `${i}: ${answer.status} ${answer.text.slice(0, 300)}`
      if (i % 10 === 9 || i % 10 === 4) {
        // a login (a session, or 503 while its keys' master is away) or /healthz (ok or unavailable)
        expect([200, 503], `${what}\n${logs()}`).toContain(answer.status)
      } else {
        // a proxied request: rate limiting fails open
        expect(answer.status, `${what}\n${logs()}`).toBe(200)
        expect(JSON.parse(answer.text)).toEqual({ ok: true })
      }
    }

    // the outage was met: the checks failed and let the requests through, with the one warning
    const warned = [a!, b!].filter((p) => p.running.output().includes(failOpenWarning))
    expect(warned.length, logs()).toBeGreaterThan(0)

    // the replica is promoted; both processes follow the new master
    await cluster!.waitUntilOk(30_000)
    const newOwner = await cluster!.masterOf(`${keyPrefix}rate-limit:{rl}:x`)
    expect(newOwner).not.toBe(owner)
    for (const p of [a!, b!]) {
      const health = await eventually(
        () => healthz(p),
        (body) => body?.checks.counterStore?.status === "ok",
        30_000
      )
      expect(health?.checks.counterStore, logs()).toEqual({ status: "ok" })
    }
    // the bucket state from before the kill survived on the replica: the limited connection stays limited
    const still = await raw(b!, fixture.limited.connectionId, "/limit/after")
    expect(still.status, still.text).toBe(429)
    // and a fresh limit of 5 admits exactly 5 of 20 across A and B again
    const again = await Promise.all(
      Array.from({ length: 20 }, (_, i) => raw(i % 2 === 0 ? a! : b!, fixture.after.connectionId, `/again/${i}`))
    )
    expect(again.filter((answer) => answer.status === 200).length, logs()).toBe(5)
    expect(again.filter((answer) => answer.status === 429).length).toBe(15)
    expect(hit("/again")).toBe(5)
    // and a login works again
    expect((await bounded(await loginUrl(a!))).status).toBe(200)
  }, 120_000)

  it("after the failover every process stops by itself on SIGTERM with exit code 0", async () => {
    for (const [name, p] of [
      ["api A", a!.running],
      ["api B", b!.running],
      ["worker", worker!]
    ] as const) {
      const stopping = Date.now()
      const code = await p.stop("SIGTERM")
      const ms = Date.now() - stopping
      console.log(`${name} stopped in ${ms} ms with exit code ${code}`)
      expect(code, `${name}:\n${p.output().slice(-4000)}`).toBe(0)
      expect(ms).toBeLessThan(10_000)
    }
  }, 60_000)
})
