/**
 * The proxy data plane, black-box (issue 6): `_proxy` and `_proxy_raw` carry the connection's
 * credentials to a local upstream and never into responses or request events; the caller's
 * `Authorization` and `X-Svc-*` headers never leave; disallowed and link-local hosts are refused
 * before any connection (a canary listener sees nothing); redirects come back unfollowed; request
 * events carry the frozen label snapshot and are listed with filters.
 */
import { randomBytes } from "node:crypto"
import { createServer, request as httpRequest, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, expectError, expectStatus, launch, resources, type Svc } from "../support/Api.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

interface ProxyAnswer {
  readonly statusCode: number
  readonly headers: Record<string, string | Array<string>>
  readonly bodyJson?: unknown
  readonly bodyRaw?: string
}

interface EventBody {
  readonly id: string
  readonly method: string
  readonly host: string
  readonly path: string
  readonly response_status_code: number | null
  readonly response_source: string
  readonly connector_id: string
  readonly connector_version: number
  readonly connection_id: string
  readonly actor_id: string
  readonly duration_ms: number
  readonly labels: Record<string, string>
  readonly full_request_recorded: boolean
}

const secret = `PLANTED${randomBytes(12).toString("hex")}`
let svc: Svc
let upstream: Upstream
let canary: Server
let canaryHits = 0
let canaryPort = 0
let connectorId: string
let connectionId: string
/** A second connection of the connector: the one a genuine 429 cools down (spec 2.9), apart from the rest. */
let limitedId: string
let ns: string

const proxy = (body: Record<string, unknown>, id = connectionId) =>
  svc.call<ProxyAnswer>("POST", `/api/v1/connections/${id}/_proxy`, { body })

const raw = (method: string, target: string, init: { headers?: Record<string, string>; body?: string } = {}) =>
  fetch(`http://127.0.0.1:${svc.ports.api}/api/v1/connections/${connectionId}/_proxy_raw`, {
    method,
    headers: { authorization: `Bearer ${svc.adminToken}`, "x-svc-upstream-url": target, ...init.headers },
    ...(init.body === undefined ? {} : { body: init.body }),
    redirect: "manual"
  })

const events = async (query: Record<string, string>) =>
  expectStatus<{ items: Array<EventBody>; cursor?: string }>(
    await svc.call("GET", `/api/v1/metrics/request-events?${new URLSearchParams(query)}`),
    200
  )

beforeAll(async () => {
  upstream = await startUpstream()
  upstream.route("/json", () => ({ status: 200, headers: { "content-type": "application/json" }, body: '{"ok":true}' }))
  upstream.route("/limited", () => ({ status: 429, headers: { "retry-after": "7" }, body: "slow down" }))
  upstream.route("/moved", () => ({ status: 302, headers: { location: `http://127.0.0.1:${canaryPort}/x` } }))
  upstream.route("/echo", (request) => ({ status: 201, body: request.body.toString("utf8") }))
  canary = createServer((_req, res) => {
    canaryHits++
    res.end("canary")
  })
  await new Promise<void>((resolve) => canary.listen(0, "127.0.0.1", resolve))
  canaryPort = (canary.address() as AddressInfo).port
  // Answers name the door that took them (`X-Svc-Door`), for "the two doors" below.
  svc = await launch("svc-proxy-", { env: { SVC__http__door_header: "true" } })
  const r = resources(svc)
  ns = await r.freshNamespace("proxy", { labels: { team: "core" } })
  const connector = await r.publishedConnector(ns, {
    definition: {
      type: "demo",
      auth: { type: "api_key", placement: "bearer" },
      proxy: {
        allowed_hosts: [`127.0.0.1:${upstream.port}`, "169.254.169.254"],
        allow_private_networks: true
      }
    }
  })
  connectorId = connector.id
  const connection = await r.connection(connectorId, { credentials: { api_key: secret }, labels: { tier: "gold" } })
  connectionId = connection.id
  limitedId = (await r.connection(connectorId, { credentials: { api_key: secret } })).id
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  await upstream?.close()
  await new Promise((resolve) => canary?.close(resolve))
})

describe("_proxy", () => {
  it("injects the credentials, strips the caller's control headers and answers an envelope", async () => {
    const before = upstream.seen().length
    const answer = expectStatus<ProxyAnswer>(
      await proxy({
        url: `${upstream.origin}/json?q=1`,
        method: "GET",
        headers: { "x-custom": "kept", authorization: "Bearer caller", "x-svc-label": "a=b" },
        labels: { feature: "sync" }
      }),
      200
    )
    expect(answer).toMatchObject({ statusCode: 200, bodyJson: { ok: true } })
    const seen = upstream.seen().slice(before)
    expect(seen).toHaveLength(1)
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${secret}`)
    expect(seen[0]?.headers["x-custom"]).toBe("kept")
    expect(seen[0]?.headers["x-svc-label"]).toBeUndefined()
    expect(JSON.stringify(answer)).not.toContain(secret)
  })

  it("passes a genuine upstream 429 through inside a 200 envelope; the next request gets svc's own 429", async () => {
    const before = upstream.seen().length
    const answer = expectStatus<ProxyAnswer>(
      await proxy({ url: `${upstream.origin}/limited`, method: "GET" }, limitedId),
      200
    )
    expect(answer.statusCode).toBe(429)
    expect(answer.headers["retry-after"]).toBe("7")
    expect(Buffer.from(answer.bodyRaw ?? "", "base64").toString()).toBe("slow down")
    // The connection cools down for the 7 s the upstream asked for: a real HTTP 429, no upstream call.
    const cooled = await proxy({ url: `${upstream.origin}/json`, method: "GET" }, limitedId)
    expect(cooled.status).toBe(429)
    expect(cooled.body).toMatchObject({ rate_limit_id: null })
    expect(upstream.seen().length).toBe(before + 1)
  })

  it("sends bodyJson as JSON and bodyRaw as bytes", async () => {
    const json = expectStatus<ProxyAnswer>(
      await proxy({ url: `${upstream.origin}/echo`, method: "POST", bodyJson: { a: [1, 2] } }),
      200
    )
    expect(Buffer.from(json.bodyRaw ?? "", "base64").toString()).toBe('{"a":[1,2]}')
    const bytes = expectStatus<ProxyAnswer>(
      await proxy({ url: `${upstream.origin}/echo`, method: "PUT", bodyRaw: Buffer.from("raw!").toString("base64") }),
      200
    )
    expect(Buffer.from(bytes.bodyRaw ?? "", "base64").toString()).toBe("raw!")
  })

  it("refuses request labels under svc/ and a body given twice", async () => {
    const reserved = expectError(
      await proxy({ url: `${upstream.origin}/json`, method: "GET", labels: { "svc/x": "y" } }),
      400,
      "invalid_request"
    )
    expect(reserved.details?.[0]?.field).toBe("body.labels.svc/x")
    expectError(
      await proxy({ url: `${upstream.origin}/json`, method: "POST", bodyJson: {}, bodyRaw: "" }),
      400,
      "invalid_request"
    )
  })

  it("refuses a disallowed host and a link-local address before any connection", async () => {
    const hits = canaryHits
    expectError(
      await proxy({ url: `http://127.0.0.1:${canaryPort}/x`, method: "GET" }),
      400,
      "upstream_host_not_allowed"
    )
    expectError(
      await proxy({ url: "http://169.254.169.254/latest/meta-data/", method: "GET" }),
      400,
      "upstream_address_not_allowed"
    )
    const response = await raw("GET", `http://127.0.0.1:${canaryPort}/x`)
    expect(response.status).toBe(400)
    expect(((await response.json()) as { code: string }).code).toBe("upstream_host_not_allowed")
    expect(canaryHits).toBe(hits)
  })

  it("returns a redirect to the caller without following it", async () => {
    const hits = canaryHits
    const answer = expectStatus<ProxyAnswer>(await proxy({ url: `${upstream.origin}/moved`, method: "GET" }), 200)
    expect(answer.statusCode).toBe(302)
    const response = await raw("GET", `${upstream.origin}/moved`)
    expect(response.status).toBe(302)
    expect(response.headers.get("location")).toBe(`http://127.0.0.1:${canaryPort}/x`)
    expect(canaryHits).toBe(hits)
  })

  it("answers 404 for an unknown connection and 403 without connections:proxy", async () => {
    expectError(
      await proxy({ url: `${upstream.origin}/json`, method: "GET" }, "cxn_aaaaaaaaaaaaaaaaaaaaaaaaaa"),
      404,
      "not_found"
    )
    const r = resources(svc)
    await r.create("actors", {
      namespace: ns,
      externalId: `reader-${ns}`,
      permissions: [{ namespace: `${ns}.**`, resources: ["connections"], verbs: ["get", "list"] }]
    })
    const token = await svc.sign(`reader-${ns}`)
    const reply = await svc.call("POST", `/api/v1/connections/${connectionId}/_proxy`, {
      token,
      body: { url: `${upstream.origin}/json`, method: "GET" }
    })
    expect(reply.status).toBe(403)
  })
})

describe("_proxy_raw", () => {
  it("carries the inbound method, body and headers; strips Authorization, X-Svc-* and hop-by-hop", async () => {
    const before = upstream.seen().length
    // node:http, not fetch: fetch refuses to send a Connection header.
    const response = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const request = httpRequest(
        `http://127.0.0.1:${svc.ports.api}/api/v1/connections/${connectionId}/_proxy_raw`,
        {
          method: "POST",
          headers: {
            authorization: `Bearer ${svc.adminToken}`,
            "x-svc-upstream-url": `${upstream.origin}/echo?x=1`,
            "content-type": "text/plain",
            "x-svc-label": "flow=raw",
            "x-other": "1",
            connection: "keep-alive, x-other",
            // TE is hop-by-hop; only `trailers` is asked upstream anew (ProxyHttpSemantics, Exchange tests).
            te: "gzip, deflate"
          }
        },
        (incoming) => {
          let text = ""
          incoming.on("data", (chunk: Buffer) => {
            text += chunk.toString("utf8")
          })
          incoming.on("end", () => resolve({ status: incoming.statusCode ?? 0, text }))
        }
      )
      request.on("error", reject)
      request.end("hello upstream")
    })
    expect(response.status).toBe(201)
    expect(response.text).toBe("hello upstream")
    const seen = upstream.seen().slice(before)
    expect(seen).toHaveLength(1)
    expect(seen[0]?.method).toBe("POST")
    expect(seen[0]?.url).toBe("/echo?x=1")
    expect(seen[0]?.headers.authorization).toBe(`Bearer ${secret}`)
    expect(seen[0]?.headers["x-svc-upstream-url"]).toBeUndefined()
    expect(seen[0]?.headers["x-svc-label"]).toBeUndefined()
    expect(seen[0]?.headers["x-other"]).toBeUndefined()
    expect(seen[0]?.headers.te).toBeUndefined()
  })

  it("answers 400 without X-Svc-Upstream-URL and for an invalid label", async () => {
    const missing = await fetch(`http://127.0.0.1:${svc.ports.api}/api/v1/connections/${connectionId}/_proxy_raw`, {
      method: "GET",
      headers: { authorization: `Bearer ${svc.adminToken}` }
    })
    expect(missing.status).toBe(400)
    const label = await raw("GET", `${upstream.origin}/json`, { headers: { "x-svc-label": "svc/act/x=1" } })
    expect(label.status).toBe(400)
    expect(((await label.json()) as { code: string }).code).toBe("invalid_label")
  })

  it("maps an unreachable upstream to 502", async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const r = resources(svc)
    const c = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: { type: "none" },
        proxy: { allowed_hosts: [`127.0.0.1:${port}`], allow_private_networks: true }
      }
    })
    const conn = await r.connection(c.id)
    expectError(await proxy({ url: `http://127.0.0.1:${port}/`, method: "GET" }, conn.id), 502, "upstream_unreachable")
  })
})

describe("the two doors", () => {
  /** What a caller can see of an answer: status, headers (but the clock, keep-alive, the request id and the door) and the body (JSON parsed; an envelope's headers but the clock). */
  const seen = async (response: Response) => {
    const headers = Object.fromEntries(
      [...response.headers].filter(([name]) => !["date", "keep-alive", "x-request-id", "x-svc-door"].includes(name))
    )
    const text = await response.text()
    let body: unknown = text
    if ((response.headers.get("content-type") ?? "").startsWith("application/json")) {
      const parsed = JSON.parse(text) as { headers?: Record<string, unknown> }
      if (parsed.headers !== undefined) delete parsed.headers.date
      body = parsed
    }
    return { status: response.status, headers, body }
  }

  const send = (token: string, route: "_proxy" | "_proxy_raw", id: string, init: RequestInit) =>
    fetch(`http://127.0.0.1:${svc.ports.api}/api/v1/connections/${id}/${route}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) },
      redirect: "manual"
    })

  it("the warm door answers each request as the cold door does: the first use of a token takes the cold door (HttpApi), the next the warm one", async () => {
    const r = resources(svc)
    const externalId = `fast-${ns}`
    await r.create("actors", {
      namespace: ns,
      externalId,
      permissions: [{ namespace: `${ns}.**`, resources: ["connections"], verbs: ["get", "list", "proxy"] }]
    })
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const c = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: { type: "none" },
        proxy: { allowed_hosts: [`127.0.0.1:${port}`], allow_private_networks: true }
      }
    })
    const unreachable = (await r.connection(c.id)).id
    const envelope = (body: unknown) => ({
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    const cases: ReadonlyArray<readonly [string, "_proxy" | "_proxy_raw", string, RequestInit]> = [
      [
        "envelope, JSON answer",
        "_proxy",
        connectionId,
        envelope({ url: `${upstream.origin}/json?q=1`, method: "GET" })
      ],
      [
        "envelope, bytes in and out",
        "_proxy",
        connectionId,
        envelope({ url: `${upstream.origin}/echo`, method: "PUT", bodyRaw: Buffer.from("raw!").toString("base64") })
      ],
      ["envelope, a redirect", "_proxy", connectionId, envelope({ url: `${upstream.origin}/moved`, method: "GET" })],
      [
        "envelope, a disallowed host",
        "_proxy",
        connectionId,
        envelope({ url: `http://127.0.0.1:${canaryPort}/x`, method: "GET" })
      ],
      ["envelope, unreachable", "_proxy", unreachable, envelope({ url: `http://127.0.0.1:${port}/`, method: "GET" })],
      [
        "envelope, a body given twice",
        "_proxy",
        connectionId,
        envelope({ url: `${upstream.origin}/json`, method: "POST", bodyJson: {}, bodyRaw: "" })
      ],
      [
        "envelope, not JSON",
        "_proxy",
        connectionId,
        { method: "POST", headers: { "content-type": "application/json" }, body: "{nope" }
      ],
      [
        "envelope, an unknown key",
        "_proxy",
        connectionId,
        envelope({ url: `${upstream.origin}/json`, method: "GET", x: 1 })
      ],
      ["envelope, no url", "_proxy", connectionId, envelope({ method: "GET" })],
      ["envelope, a NUL", "_proxy", connectionId, envelope({ url: `${upstream.origin}/json`, method: "GET\u0000" })],
      ["raw, no upstream URL", "_proxy_raw", connectionId, { headers: {} }],
      [
        "raw, JSON answer",
        "_proxy_raw",
        connectionId,
        { headers: { "x-svc-upstream-url": `${upstream.origin}/json` } }
      ],
      [
        "raw, a body",
        "_proxy_raw",
        connectionId,
        { method: "POST", headers: { "x-svc-upstream-url": `${upstream.origin}/echo` }, body: "hello" }
      ],
      [
        "raw, unreachable",
        "_proxy_raw",
        unreachable,
        { headers: { "x-svc-upstream-url": `http://127.0.0.1:${port}/` } }
      ]
    ]
    // A request the handler serves (whatever its answer) remembers its caller and loads its connection.
    const prime: Record<"_proxy" | "_proxy_raw", RequestInit> = {
      _proxy: envelope({ url: `${upstream.origin}/json`, method: "GET" }),
      _proxy_raw: { headers: { "x-svc-upstream-url": `${upstream.origin}/json` } }
    }
    for (const [name, route, id, init] of cases) {
      const cold = await send(await svc.sign(externalId), route, id, init)
      const token = await svc.sign(externalId)
      const primed = await send(token, route, id, prime[route])
      expect([name, primed.headers.get("x-svc-door")]).toEqual([name, "cold"])
      await primed.arrayBuffer()
      const warm = await send(token, route, id, init)
      expect([name, cold.headers.get("x-svc-door"), warm.headers.get("x-svc-door")]).toEqual([name, "cold", "warm"])
      const first = await seen(cold)
      const second = await seen(warm)
      expect({ name, ...second }).toEqual({ name, ...first })
    }
  })
})

describe("request events", () => {
  it("records each exchange with the frozen label snapshot and no credential", async () => {
    await proxy({ url: `${upstream.origin}/json?token=abc`, method: "GET", labels: { feature: "events" } })
    const found = (
      await eventually(
        () => events({ connectionId, labelSelector: "feature=events" }),
        (page) => page.items.length > 0
      )
    ).items
    const event = found[0] as EventBody
    expect(event).toMatchObject({
      method: "GET",
      host: `127.0.0.1:${upstream.port}`,
      path: "/json",
      response_status_code: 200,
      response_source: "upstream",
      connector_id: connectorId,
      connector_version: 1,
      connection_id: connectionId,
      full_request_recorded: false
    })
    expect(event.labels).toMatchObject({
      tier: "gold",
      feature: "events",
      "svc/ns/team": "core",
      "svc/cxn/-/id": connectionId
    })
    expect(event.labels["svc/act/-/id"]).toBe(event.actor_id)
    expect(JSON.stringify(found)).not.toContain(secret)
    const one = expectStatus<EventBody>(await svc.call("GET", `/api/v1/metrics/request-events/${event.id}`), 200)
    expect(one.id).toBe(event.id)
  })

  it("filters by status range, method, path and namespace", async () => {
    const limited = await eventually(
      () => events({ connectionId: limitedId, statusCodeRange: "400-499" }),
      (page) => page.items.length > 0
    )
    expect(limited.items.every((e) => e.response_status_code === 429)).toBe(true)
    const posts = await events({ connectionId, method: "POST" })
    expect(posts.items.length).toBeGreaterThan(0)
    expect(posts.items.every((e) => e.method === "POST")).toBe(true)
    const paths = await events({ connectionId: limitedId, path: "/limited" })
    expect(paths.items.length).toBeGreaterThan(0)
    expect(paths.items.every((e) => e.path === "/limited")).toBe(true)
    const elsewhere = await events({ namespace: "root.elsewhere.**" })
    expect(elsewhere.items).toHaveLength(0)
  })
})
