/**
 * Rate limits and the reactive limiter, black-box on the embedded default (issue 15; spec 2.8,
 * 2.9, 2.12, 4.6, 7): each algorithm admits exactly its limit and answers the rest with svc's own
 * 429 (`Retry-After`, `X-Svc-Ratelimited`, `X-Svc-Ratelimit`, the spec body) without calling the
 * upstream; observe rules never reject but are recorded; rules stack across namespace levels and
 * the longest retry-after is reported; buckets split by dimension (request labels included); a
 * PATCH applies at once in the writing process; an upstream 429 cools the connection down (its
 * own answer passes through unchanged) unless the connector disables the limiter; a rule
 * rejection wins over a cool-down; request events carry the rate-limit fields and the list filters
 * on them. Each test works in a namespace of its own so rules never meet.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConnectionBody,
  eventually,
  expectStatus,
  launch,
  type RateLimitBody,
  resources,
  type Svc
} from "../support/Api.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

interface ProxyEnvelope {
  readonly statusCode: number
  readonly headers: Record<string, string | Array<string>>
  readonly bodyJson?: unknown
}

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: unknown
}

interface EventBody {
  readonly id: string
  readonly type: string
  readonly path: string
  readonly response_status_code: number | null
  readonly response_source: string
  readonly rate_limit_id: string | null
  readonly rate_limit_mode: string | null
  readonly rate_limit_bucket: Record<string, string> | null
  readonly rate_limit_matched: Array<{ id: string; mode: string; bucket: Record<string, string> }> | null
  readonly labels: Record<string, string>
}

interface Rejection {
  readonly error: string
  readonly rate_limit_id: string | null
  readonly retry_after_seconds: number
}

const apiKey = "rate-limit-test-key"
let svc: Svc
let upstream: Upstream

beforeAll(async () => {
  upstream = await startUpstream()
  upstream.route("/", () => ({ status: 200, headers: { "content-type": "application/json" }, body: '{"ok":true}' }))
  upstream.route("/slow-down", () => ({ status: 429, headers: { "retry-after": "3" }, body: "slow down" }))
  upstream.route("/bare-429", () => ({ status: 429, body: "no hint" }))
  svc = await launch("svc-ratelimits-")
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  await upstream?.close()
})

/** The upstream requests of connection `id` so far (they carry its key and its label). */
const upstreamCalls = (path?: string) =>
  upstream.seen().filter((request) => path === undefined || request.path.startsWith(path)).length

/**
 * A fresh namespace with a published api_key connector to the upstream (with an on-demand probe
 * `ping` of `GET <probePath>`) and one connection in it.
 */
const setup = async (prefix: string, rateLimiting?: Record<string, unknown>, parent = "root", probePath = "/probe") => {
  const r = resources(svc)
  const ns = (await r.namespace(`${parent}.${prefix}${Math.random().toString(36).slice(2, 8)}`)).path
  const connector = await r.publishedConnector(ns, {
    definition: {
      type: "demo",
      auth: { type: "api_key", placement: "bearer" },
      proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true },
      probes: [{ id: "ping", url: `${upstream.origin}${probePath}` }],
      ...(rateLimiting === undefined ? {} : { rate_limiting: rateLimiting })
    }
  })
  const connection = await r.connection(connector.id, { credentials: { api_key: apiKey } })
  return { ns, connectorId: connector.id, connectionId: connection.id }
}

const rule = async (namespace: string, definition: Record<string, unknown>) =>
  expectStatus<RateLimitBody>(await svc.call("POST", "/api/v1/rate-limits", { body: { namespace, definition } }), 201)

/** `_proxy` of `method path`: svc's own answer, or the envelope (status 200) of the upstream's. */
const proxy = async (
  connectionId: string,
  path = "/json",
  method = "GET",
  labels?: Record<string, string>,
  token = svc.adminToken
) => {
  const response = await fetch(`http://127.0.0.1:${svc.ports.api}/api/v1/connections/${connectionId}/_proxy`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ url: `${upstream.origin}${path}`, method, ...(labels === undefined ? {} : { labels }) })
  })
  return { status: response.status, headers: response.headers, body: await response.json() } satisfies Answer
}

/** `_proxy_raw` GET of `path` with `X-Svc-Label` headers. */
const raw = async (connectionId: string, path: string, labels: ReadonlyArray<string> = []) => {
  const headers = new Headers({
    authorization: `Bearer ${svc.adminToken}`,
    "x-svc-upstream-url": `${upstream.origin}${path}`
  })
  for (const label of labels) headers.append("x-svc-label", label)
  const response = await fetch(`http://127.0.0.1:${svc.ports.api}/api/v1/connections/${connectionId}/_proxy_raw`, {
    headers
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text } satisfies Answer
}

/** Asserts svc's own 429 (spec 7) and returns its body. */
const expectSvc429 = (answer: Answer, ruleId: string | null): Rejection => {
  expect(answer.status, JSON.stringify(answer.body)).toBe(429)
  expect(answer.headers.get("x-svc-ratelimited")).toBe("true")
  expect(answer.headers.get("x-svc-ratelimit")).toBe(ruleId)
  const body = (typeof answer.body === "string" ? JSON.parse(answer.body) : answer.body) as Rejection
  expect(Object.keys(body).sort()).toEqual(["error", "rate_limit_id", "retry_after_seconds"])
  expect(body.rate_limit_id).toBe(ruleId)
  expect(Number.isInteger(body.retry_after_seconds) && body.retry_after_seconds >= 1).toBe(true)
  expect(answer.headers.get("retry-after")).toBe(String(body.retry_after_seconds))
  expect(typeof body.error).toBe("string")
  return body
}

/** Asserts an upstream answer of `_proxy` (its envelope) with `statusCode`. */
const expectUpstream = (answer: Answer, statusCode = 200) => {
  expect(answer.status, JSON.stringify(answer.body)).toBe(200)
  expect((answer.body as ProxyEnvelope).statusCode).toBe(statusCode)
  expect(answer.headers.get("x-svc-ratelimited")).toBeNull()
}

/** The events of a connection, oldest first, once `count` of them are listed. */
const eventsOf = async (connectionId: string, count: number, query: Record<string, string> = {}) => {
  const page = await eventually(
    async () =>
      expectStatus<{ items: Array<EventBody> }>(
        await svc.call(
          "GET",
          `/api/v1/metrics/request-events?${new URLSearchParams({ connectionId, limit: "100", ...query })}`
        ),
        200
      ),
    (found) => found.items.length >= count,
    20_000
  )
  expect(page.items).toHaveLength(count)
  return [...page.items].reverse()
}

const windowOf = (ms: number) => Math.floor(Date.now() / ms)

describe("enforce rules", () => {
  it("a fixed window of 2 per minute admits 2 of 4; the rest never reach the upstream", async () => {
    // Four requests take milliseconds; if a minute boundary fell between them, run again once.
    for (let attempt = 1; ; attempt++) {
      const { ns, connectionId } = await setup("fixed")
      const limit = await rule(ns, {
        selector: {},
        bucket: { dimensions: ["connection"] },
        algorithm: { fixed_window: { window: "1m", limit: 2 } }
      })
      const window = windowOf(60_000)
      const before = upstreamCalls()
      const answers = []
      for (let i = 0; i < 4; i++) answers.push(await proxy(connectionId, `/json?i=${i}`))
      if (windowOf(60_000) !== window && attempt === 1) continue

      expectUpstream(answers[0]!)
      expectUpstream(answers[1]!)
      const third = expectSvc429(answers[2]!, limit.id)
      expectSvc429(answers[3]!, limit.id)
      expect(third.retry_after_seconds).toBeLessThanOrEqual(60)
      expect(upstreamCalls() - before).toBe(2)

      const events = await eventsOf(connectionId, 4)
      const matched = [{ id: limit.id, mode: "enforce", bucket: { connection: connectionId } }]
      for (const event of events.slice(0, 2)) {
        expect(event).toMatchObject({
          response_source: "upstream",
          response_status_code: 200,
          rate_limit_id: null,
          rate_limit_matched: matched
        })
      }
      for (const event of events.slice(2)) {
        expect(event).toMatchObject({
          response_source: "rate_limit",
          response_status_code: 429,
          rate_limit_id: limit.id,
          rate_limit_mode: "enforce",
          rate_limit_bucket: { connection: connectionId },
          rate_limit_matched: matched
        })
      }
      const filtered = await eventsOf(connectionId, 2, { response_source: "rate_limit", rate_limit_id: limit.id })
      expect(filtered.map((event) => event.response_source)).toEqual(["rate_limit", "rate_limit"])
      expect(await eventsOf(connectionId, 2, { response_source: "upstream" })).toHaveLength(2)
      return
    }
  }, 60_000)

  /** Admits 2, rejects the third with a wait of at most 2 s, admits again once that wait is over. */
  const admitsAgain = (prefix: string, algorithm: Record<string, unknown>) => async () => {
    const { ns, connectionId } = await setup(prefix)
    const limit = await rule(ns, { selector: {}, bucket: { dimensions: [] }, algorithm })
    expectUpstream(await proxy(connectionId))
    expectUpstream(await proxy(connectionId))
    const rejected = expectSvc429(await proxy(connectionId), limit.id)
    expect(rejected.retry_after_seconds).toBeLessThanOrEqual(2)
    await new Promise((resolve) => setTimeout(resolve, rejected.retry_after_seconds * 1_000 + 100))
    expectUpstream(await proxy(connectionId))
  }

  it(
    "a sliding log admits again once the oldest request leaves the window",
    admitsAgain("log", { sliding_window: { window: "2s", limit: 2, mode: "log" } }),
    30_000
  )

  it(
    "a token bucket starts full and admits again after its refill",
    admitsAgain("bucket", { token_bucket: { capacity: 2, refill_rate: 0.5 } }),
    30_000
  )

  it("a sliding counter admits its limit in a fresh window and rejects the next", async () => {
    const { ns, connectionId } = await setup("counter")
    const limit = await rule(ns, {
      selector: {},
      bucket: { dimensions: ["connection"] },
      algorithm: { sliding_window: { window: "1h", limit: 3, mode: "counter" } }
    })
    for (let i = 0; i < 3; i++) expectUpstream(await proxy(connectionId))
    expect(expectSvc429(await proxy(connectionId), limit.id).retry_after_seconds).toBeLessThanOrEqual(3_600)
  }, 30_000)

  it("selectors: methods and a glob path on the final upstream path; other requests are not counted", async () => {
    const { ns, connectionId } = await setup("select")
    const limit = await rule(ns, {
      selector: { methods: ["POST"], path_match: { kind: "glob", value: "/v1/*/items" } },
      bucket: { dimensions: ["method"] },
      algorithm: { sliding_window: { window: "1h", limit: 1, mode: "log" } }
    })
    expectUpstream(await proxy(connectionId, "/v1/a/items", "POST"))
    expectSvc429(await proxy(connectionId, "/v1/b/items", "POST"), limit.id)
    // `*` does not cross `/`; GET is not selected; a query string is not part of the path.
    expectUpstream(await proxy(connectionId, "/v1/a/b/items", "POST"))
    expectUpstream(await proxy(connectionId, "/v1/a/items", "GET"))
    expectSvc429(await proxy(connectionId, "/v1/c/items?x=1", "POST"), limit.id)
    const events = await eventsOf(connectionId, 5)
    expect(events.map((event) => event.rate_limit_matched?.length ?? 0)).toEqual([1, 1, 0, 0, 1])
    expect(events[0]?.rate_limit_matched?.[0]?.bucket).toEqual({ method: "POST" })
  }, 30_000)

  it("request labels split buckets; a missing label is its own empty-string bucket", async () => {
    const { ns, connectionId } = await setup("labels")
    const limit = await rule(ns, {
      selector: {},
      bucket: { dimensions: ["labels/tenant"] },
      algorithm: { sliding_window: { window: "1h", limit: 1, mode: "log" } }
    })
    expect((await raw(connectionId, "/t", ["tenant=a"])).status).toBe(200)
    expect((await raw(connectionId, "/t", ["tenant=b"])).status).toBe(200)
    expect((await raw(connectionId, "/t")).status).toBe(200)
    expectSvc429(await raw(connectionId, "/t", ["tenant=a"]), limit.id)
    expectSvc429(await raw(connectionId, "/t"), limit.id)
    expect((await raw(connectionId, "/t", ["tenant=c"])).status).toBe(200)
    const events = await eventsOf(connectionId, 6)
    expect(events.map((event) => event.rate_limit_matched?.[0]?.bucket)).toEqual([
      { "labels/tenant": "a" },
      { "labels/tenant": "b" },
      { "labels/tenant": "" },
      { "labels/tenant": "a" },
      { "labels/tenant": "" },
      { "labels/tenant": "c" }
    ])
    expect(events[3]).toMatchObject({ response_source: "rate_limit", rate_limit_bucket: { "labels/tenant": "a" } })
  }, 30_000)

  it("actor, namespace and connector_version dimensions: each actor has its own bucket", async () => {
    const { ns, connectionId } = await setup("actors")
    const externalId = `rl-actor-${Math.random().toString(36).slice(2, 8)}`
    const other = resources(svc)
    const created = await other.create("actors", {
      externalId,
      namespace: ns,
      permissions: [{ namespace: `${ns}.**`, resources: ["connections"], verbs: ["proxy", "get"] }]
    })
    const token = await svc.sign(externalId)
    const limit = await rule(ns, {
      selector: {},
      bucket: { dimensions: ["actor", "namespace", "connector_version"] },
      algorithm: { sliding_window: { window: "1h", limit: 1, mode: "log" } }
    })
    expectUpstream(await proxy(connectionId))
    expectSvc429(await proxy(connectionId), limit.id)
    expectUpstream(await proxy(connectionId, "/json", "GET", undefined, token))
    expectSvc429(await proxy(connectionId, "/json", "GET", undefined, token), limit.id)
    const events = await eventsOf(connectionId, 4)
    const buckets = events.map((event) => event.rate_limit_matched?.[0]?.bucket)
    expect(buckets[2]).toEqual({ actor: created.id, namespace: ns, connector_version: "1" })
    expect(buckets[0]?.actor).not.toBe(created.id)
    expect(buckets[0]).toMatchObject({ namespace: ns, connector_version: "1" })
  }, 30_000)

  it("a PATCH applies at once in the writing process; a DELETE lifts the rule", async () => {
    const { ns, connectionId } = await setup("patch")
    const limit = await rule(ns, {
      selector: {},
      bucket: { dimensions: ["connection"] },
      algorithm: { sliding_window: { window: "1h", limit: 1, mode: "log" } }
    })
    expectUpstream(await proxy(connectionId))
    expectSvc429(await proxy(connectionId), limit.id)
    expectStatus(
      await svc.call("PATCH", `/api/v1/rate-limits/${limit.id}`, {
        body: {
          definition: {
            selector: {},
            bucket: { dimensions: ["connection"] },
            algorithm: { sliding_window: { window: "1h", limit: 2, mode: "log" } }
          }
        }
      }),
      200
    )
    // The rejected request consumed nothing: one more is admitted under the new limit of 2.
    expectUpstream(await proxy(connectionId))
    expectSvc429(await proxy(connectionId), limit.id)
    expectStatus(await svc.call("DELETE", `/api/v1/rate-limits/${limit.id}`), 204)
    expectUpstream(await proxy(connectionId))
  }, 30_000)
})

describe("observe rules and stacking", () => {
  it("an observe rule never rejects; events name it once it would have rejected (a dry run)", async () => {
    const { ns, connectionId } = await setup("observe")
    const watch = await rule(ns, {
      mode: "observe",
      selector: {},
      bucket: { dimensions: ["connection"] },
      algorithm: { sliding_window: { window: "1h", limit: 1, mode: "log" } }
    })
    for (let i = 0; i < 3; i++) expectUpstream(await proxy(connectionId))
    const events = await eventsOf(connectionId, 3)
    expect(events.map((event) => event.response_source)).toEqual(["upstream", "upstream", "upstream"])
    expect(events.map((event) => event.rate_limit_id)).toEqual([null, watch.id, watch.id])
    expect(events[1]).toMatchObject({ rate_limit_mode: "observe", rate_limit_bucket: { connection: connectionId } })
    expect(await eventsOf(connectionId, 2, { rate_limit_id: watch.id })).toHaveLength(2)
  }, 30_000)

  it("rules at several namespace levels all count; the longest retry-after is reported", async () => {
    const r = resources(svc)
    const parent = (await r.namespace(`root.stack${Math.random().toString(36).slice(2, 8)}`)).path
    const left = await setup("left", undefined, parent)
    const right = await setup("right", undefined, parent)
    // One global counter for the whole subtree, a tighter per-connection rule on the left only.
    const shared = await rule(parent, {
      selector: {},
      bucket: { dimensions: [] },
      algorithm: { sliding_window: { window: "1h", limit: 3, mode: "log" } }
    })
    const tight = await rule(left.ns, {
      selector: {},
      bucket: { dimensions: ["connection"] },
      algorithm: { token_bucket: { capacity: 2, refill_rate: 0.05 } }
    })
    expectUpstream(await proxy(left.connectionId))
    expectUpstream(await proxy(left.connectionId))
    // The left rule rejects (a token in at most 20 s); the parent rule still admits (1 of 3 left).
    expect(expectSvc429(await proxy(left.connectionId), tight.id).retry_after_seconds).toBeLessThanOrEqual(20)
    expectUpstream(await proxy(right.connectionId))
    // Now both reject the left connection: the parent's hour-long log is the longer wait.
    expect(expectSvc429(await proxy(left.connectionId), shared.id).retry_after_seconds).toBeGreaterThan(60)
    expectSvc429(await proxy(right.connectionId), shared.id)

    const events = await eventsOf(left.connectionId, 4)
    expect(events[0]?.rate_limit_matched?.map((match) => match.id)).toEqual([shared.id, tight.id])
    expect(events[3]).toMatchObject({ rate_limit_id: shared.id, rate_limit_bucket: {} })
  }, 30_000)
})

interface ProbeBody {
  readonly outcome: string
  readonly statusCode?: number
  readonly error?: string
}

describe("probes go through the same chain", () => {
  it("a probe counts against rules selecting `probe`, is rejected without a call, and leaves probe events", async () => {
    const { ns, connectorId, connectionId } = await setup("probe")
    const limit = await rule(ns, {
      selector: { request_types: ["probe"] },
      bucket: { dimensions: ["connection"] },
      algorithm: { sliding_window: { window: "1h", limit: 1, mode: "log" } }
    })
    const runProbe = async () =>
      expectStatus<ProbeBody>(
        await svc.call("GET", `/api/v1/connectors/${connectorId}/probes/ping?connectionId=${connectionId}`),
        200
      )
    const before = upstreamCalls("/probe")
    expect(await runProbe()).toMatchObject({ outcome: "success", statusCode: 200 })
    const rejected = await runProbe()
    expect(rejected.outcome).toBe("failure")
    expect(rejected.error).toContain(limit.id)
    expect(upstreamCalls("/probe") - before).toBe(1)
    // The rule selects probes only: proxied requests are not counted.
    expectUpstream(await proxy(connectionId))

    const events = await eventsOf(connectionId, 3)
    expect(events.map((event) => [event.type, event.response_source, event.response_status_code])).toEqual([
      ["probe", "upstream", 200],
      ["probe", "rate_limit", 429],
      ["proxy", "upstream", 200]
    ])
    expect(events[0]?.labels["svc/act/-/id"]).toBeDefined()
    expect(events[1]).toMatchObject({ rate_limit_id: limit.id, path: "/probe" })
    expect(events[2]?.rate_limit_matched).toBeNull()
  }, 30_000)

  it("a scheduled probe held back by a rule says nothing of health", async () => {
    const r = resources(svc)
    const ns = (await r.namespace(`root.monitor${Math.random().toString(36).slice(2, 8)}`)).path
    const limit = await rule(ns, {
      selector: { request_types: ["probe"] },
      bucket: { dimensions: ["connection"] },
      algorithm: { sliding_window: { window: "1h", limit: 1, mode: "log" } }
    })
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: { type: "none" },
        proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true },
        probes: [{ id: "beat", url: `${upstream.origin}/monitor`, period: "1s", failure_threshold: 1 }]
      }
    })
    const connection = await r.connection(connector.id, {})
    // The first scheduled run reaches the upstream, the next is rejected by the rule.
    const events = await eventsOf(connection.id, 2)
    expect(events.map((event) => [event.type, event.response_source])).toEqual([
      ["probe", "upstream"],
      ["probe", "rate_limit"]
    ])
    expect(events[1]?.rate_limit_id).toBe(limit.id)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(upstream.seen().filter((request) => request.path === "/monitor")).toHaveLength(1)
    expect((await r.get<ConnectionBody>("connections", connection.id)).healthState).toBe("healthy")
  }, 30_000)

  it("a probe answered 429 cools the connection down for proxied requests too", async () => {
    upstream.route("/probe-429", () => ({ status: 429, headers: { "retry-after": "30" }, body: "" }))
    const { connectorId, connectionId } = await setup("probe429", undefined, "root", "/probe-429")
    const result = expectStatus<ProbeBody>(
      await svc.call("GET", `/api/v1/connectors/${connectorId}/probes/ping?connectionId=${connectionId}`),
      200
    )
    expect(result).toMatchObject({ outcome: "failure", statusCode: 429 })
    const before = upstreamCalls()
    expectSvc429(await proxy(connectionId), null)
    expect(upstreamCalls()).toBe(before)
  }, 30_000)
})

describe("OAuth2 token calls go through the rules", () => {
  it("a client-credentials grant counts against rules of its type and leaves events; a rejection is 503", async () => {
    upstream.route("/token", () => ({
      status: 200,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ access_token: `at-${Math.random()}`, token_type: "bearer", expires_in: 3600 })
    }))
    const r = resources(svc)
    const ns = (await r.namespace(`root.oauth${Math.random().toString(36).slice(2, 8)}`)).path
    const limit = await rule(ns, {
      selector: { request_types: ["oauth2_client_credentials"] },
      bucket: { dimensions: ["connector"] },
      algorithm: { sliding_window: { window: "1h", limit: 1, mode: "log" } }
    })
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: {
          type: "oauth2",
          grant_type: "client_credentials",
          token_endpoint: `${upstream.origin}/token`,
          client_auth: "client_secret_post"
        },
        proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
      }
    })
    const tokenCalls = () => upstream.seen().filter((request) => request.path === "/token").length
    const before = tokenCalls()
    const first = await r.connection(connector.id, { credentials: { client_id: "a", client_secret: "secret-a" } })
    const second = await svc.call("POST", "/api/v1/connections", {
      body: { connectorId: connector.id, credentials: { client_id: "b", client_secret: "secret-b" } }
    })
    expect(second.status, JSON.stringify(second.body)).toBe(503)
    expect(second.body).toMatchObject({ code: "token_request_rate_limited" })
    expect(JSON.stringify(second.body)).not.toContain("secret-b")
    expect(tokenCalls() - before).toBe(1)
    // The first connection's event: the grant, to the token endpoint's path, no secret anywhere.
    const events = await eventsOf(first.id, 1)
    expect(events[0]).toMatchObject({
      type: "oauth2_client_credentials",
      response_source: "upstream",
      response_status_code: 200,
      path: "/token"
    })
    expect(events[0]?.rate_limit_matched?.map((match) => match.id)).toEqual([limit.id])
    expect(JSON.stringify(events)).not.toContain("secret-a")
    // The rejected grant's event (its connection was never created) is found by the rule.
    const rejected = await eventually(
      async () =>
        expectStatus<{ items: Array<EventBody> }>(
          await svc.call(
            "GET",
            `/api/v1/metrics/request-events?${new URLSearchParams({ rate_limit_id: limit.id, response_source: "rate_limit" })}`
          ),
          200
        ).items,
      (items) => items.length > 0,
      20_000
    )
    expect(rejected.map((event) => [event.type, event.response_status_code])).toEqual([
      ["oauth2_client_credentials", 429]
    ])
    // Proxied requests are not of this type: the rule leaves them alone.
    expectUpstream(await proxy(first.id))
  }, 30_000)
})

describe("the reactive limiter", () => {
  it("an upstream 429 passes through; later requests get svc's 429 until the wait is over", async () => {
    const { connectionId } = await setup("cool")
    const before = upstreamCalls()
    const first = await proxy(connectionId, "/slow-down")
    expectUpstream(first, 429)
    expect((first.body as ProxyEnvelope).headers["retry-after"]).toBe("3")

    const cooled = expectSvc429(await proxy(connectionId, "/json"), null)
    expect(cooled.retry_after_seconds).toBeLessThanOrEqual(3)
    expectSvc429(await raw(connectionId, "/json"), null)
    expect(upstreamCalls() - before).toBe(1)

    await new Promise((resolve) => setTimeout(resolve, 3_200))
    expectUpstream(await proxy(connectionId, "/json"))
    const events = await eventsOf(connectionId, 4)
    expect(events.map((event) => [event.response_source, event.response_status_code])).toEqual([
      ["upstream", 429],
      ["connector_rate_limiter", 429],
      ["connector_rate_limiter", 429],
      ["upstream", 200]
    ])
    expect(events[1]?.rate_limit_id).toBeNull()
    expect(await eventsOf(connectionId, 2, { response_source: "connector_rate_limiter" })).toHaveLength(2)
  }, 30_000)

  it("without a Retry-After the connector's default_retry_after applies", async () => {
    const { connectionId } = await setup("default", { default_retry_after: "2s" })
    expectUpstream(await proxy(connectionId, "/bare-429"), 429)
    expect(expectSvc429(await proxy(connectionId), null).retry_after_seconds).toBeLessThanOrEqual(2)
    await new Promise((resolve) => setTimeout(resolve, 2_200))
    expectUpstream(await proxy(connectionId))
  }, 30_000)

  it("rate_limiting.disabled passes 429s through and records no cool-down", async () => {
    const { connectionId } = await setup("disabled", { disabled: true })
    expectUpstream(await proxy(connectionId, "/slow-down"), 429)
    expectUpstream(await proxy(connectionId, "/slow-down"), 429)
    expectUpstream(await proxy(connectionId, "/json"))
  }, 30_000)

  it("a rule rejection wins over a cool-down", async () => {
    const { ns, connectionId } = await setup("wins")
    const limit = await rule(ns, {
      selector: {},
      bucket: { dimensions: ["connection"] },
      algorithm: { sliding_window: { window: "1h", limit: 1, mode: "log" } }
    })
    expectUpstream(await proxy(connectionId, "/slow-down"), 429)
    expectSvc429(await proxy(connectionId), limit.id)
    const events = await eventsOf(connectionId, 2)
    expect(events[1]).toMatchObject({ response_source: "rate_limit", rate_limit_id: limit.id })
  }, 30_000)
})

describe("request labels cannot relabel what a rule selects on (SECURITY.md)", () => {
  it("a request label contradicting the connection's is 400 on both routes and both paths; others still count", async () => {
    const r = resources(svc)
    const ns = (await r.namespace(`root.relabel${Math.random().toString(36).slice(2, 8)}`)).path
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: { type: "api_key", placement: "bearer" },
        proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
      }
    })
    const connectionId = (
      await r.connection(connector.id, { credentials: { api_key: apiKey }, labels: { tier: "free" } })
    ).id
    const limit = await rule(ns, {
      selector: { label_selector: "tier=free" },
      bucket: { dimensions: [] },
      algorithm: { sliding_window: { window: "1h", limit: 1, mode: "log" } }
    })
    const externalId = `relabel-${connectionId}`
    await r.create("actors", {
      namespace: ns,
      externalId,
      permissions: [{ namespace: `${ns}.**`, resources: ["connections"], verbs: ["get", "list", "proxy"] }]
    })
    const send = (token: string, route: "_proxy" | "_proxy_raw", labels: Record<string, string>) => {
      const url = `http://127.0.0.1:${svc.ports.api}/api/v1/connections/${connectionId}/${route}`
      if (route === "_proxy") {
        return fetch(url, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ url: `${upstream.origin}/json`, method: "GET", labels })
        })
      }
      const headers = new Headers({ authorization: `Bearer ${token}`, "x-svc-upstream-url": `${upstream.origin}/json` })
      for (const [key, value] of Object.entries(labels)) headers.append("x-svc-label", `${key}=${value}`)
      return fetch(url, { headers })
    }

    // A label the connection does not carry, and one repeating its value: admitted and counted.
    const admitted = await send(await svc.sign(externalId), "_proxy_raw", { team: "a", tier: "free" })
    expect(admitted.status, await admitted.clone().text()).toBe(200)
    await admitted.arrayBuffer()

    const before = upstreamCalls()
    for (const route of ["_proxy", "_proxy_raw"] as const) {
      // A fresh token: the first request takes the HttpApi route (Pipeline.ts), the second the fast path.
      const token = await svc.sign(externalId)
      for (const door of ["pipeline", "fast path"]) {
        const refused = await send(token, route, { tier: "premium" })
        const body = (await refused.json()) as { error: string; code: string; details?: Array<{ field: string }> }
        expect({ route, door, status: refused.status, code: body.code }).toEqual({
          route,
          door,
          status: 400,
          code: "label_conflict"
        })
        expect(body.error).toContain("tier")
        expect(body.details).toEqual([{ field: "labels.tier", message: expect.any(String) }])
      }
    }
    expect(upstreamCalls() - before).toBe(0)

    // The rule still counts the connection's requests: the next one is svc's own 429.
    expectSvc429(await raw(connectionId, "/json", ["team=b"]), limit.id)

    const events = await eventsOf(connectionId, 2)
    expect(events[0]?.labels).toMatchObject({ tier: "free", team: "a" })
    expect(events[1]?.labels).toMatchObject({ tier: "free", team: "b" })
    expect(events.map((event) => event.response_source)).toEqual(["upstream", "rate_limit"])
  }, 60_000)
})
