/**
 * Black-box fuzz of strict input handling (issue 13): hostile strings (NUL, lone surrogates,
 * control characters, very long text, numeric edge cases, deep JSON) on ~20 routes of a real
 * embedded `svc`. No response may be 5xx, every 4xx carries the standard error body, nothing a
 * refused request named is stored, and the service still answers afterwards. Loopback only,
 * bounded in count.
 */
import { hostileText, wtf8PercentEncode } from "@svc/domain/testing/HostileInput"
import * as fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ConnectorBody, definition, expectStatus, launch, rand, resources, type Svc } from "../support/Api.ts"

const deepJson = (depth: number): string => `${"[".repeat(depth)}1${"]".repeat(depth)}`

interface Attempt {
  readonly method: string
  readonly path: string
  /** Raw body text (JSON.stringify keeps lone surrogates as `\udxxx` escapes). */
  readonly body?: string
  readonly contentType?: string
  /** A marker that must not be stored when the request is refused. */
  readonly marker?: string
  readonly token?: string
}

describe("input fuzz (black box)", () => {
  let svc: Svc
  let connectorId: string
  let keyConnectorId: string
  let connectionId: string
  let adminToken: string
  const refusedMarkers: Array<string> = []
  const statuses = new Map<number, number>()

  beforeAll(async () => {
    svc = await launch("svc-input-fuzz-")
    adminToken = svc.adminToken
    const r = resources(svc)
    connectorId = (await r.publishedConnector("root")).id
    const keyConnector = await r.create<ConnectorBody>("connectors", {
      namespace: "root",
      definition: {
        ...definition("fuzz", "api_key"),
        auth: { type: "api_key", placement: "header", header_name: "X-Key" },
        proxy: { allowed_hosts: ["127.0.0.1"] }
      }
    })
    keyConnectorId = keyConnector.id
    await r.publish(keyConnectorId)
    connectionId = (await r.connection(keyConnectorId, { credentials: { api_key: "k3y" } })).id
  }, 120_000)

  afterAll(async () => {
    await svc?.stop()
  })

  const send = async (attempt: Attempt) => {
    const headers: Record<string, string> = { authorization: `Bearer ${attempt.token ?? adminToken}` }
    if (attempt.body !== undefined) headers["content-type"] = attempt.contentType ?? "application/json"
    const response = await fetch(`http://127.0.0.1:${svc.ports.api}${attempt.path}`, {
      method: attempt.method,
      headers,
      ...(attempt.body === undefined ? {} : { body: attempt.body })
    })
    const text = await response.text()
    statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
    const where = `${attempt.method} ${attempt.path.slice(0, 120)} → ${response.status} ${text.slice(0, 200)}`
    expect(response.status, where).toBeLessThan(500)
    if (response.status >= 400) {
      const body = JSON.parse(text) as { error?: unknown; code?: unknown; details?: unknown }
      expect(typeof body.error, where).toBe("string")
      expect(typeof body.code, where).toBe("string")
      if (body.details !== undefined) expect(Array.isArray(body.details), where).toBe(true)
      if (attempt.marker !== undefined) refusedMarkers.push(attempt.marker)
    }
    return response.status
  }

  const routes: ReadonlyArray<(h: string, m: string) => Attempt> = [
    (h, m) => ({
      method: "POST",
      path: "/api/v1/namespaces",
      body: JSON.stringify({ path: `root.${m}`, annotations: { note: h } }),
      marker: m
    }),
    (h, m) => ({
      method: "POST",
      path: "/api/v1/namespaces",
      body: JSON.stringify({ path: `root.${m}`, annotations: { [h]: "v" } }),
      marker: m
    }),
    (h) => ({ method: "GET", path: `/api/v1/namespaces/${wtf8PercentEncode(h)}` }),
    (h) => ({
      method: "PATCH",
      path: `/api/v1/namespaces/root.${wtf8PercentEncode(h)}`,
      body: JSON.stringify({ annotations: { a: h } })
    }),
    (h) => ({ method: "GET", path: `/api/v1/namespaces?name=${wtf8PercentEncode(h)}&limit=${wtf8PercentEncode(h)}` }),
    (h, m) => ({
      method: "POST",
      path: "/api/v1/actors",
      body: JSON.stringify({ externalId: `${m}${h}`, namespace: "root", name: m }),
      marker: m
    }),
    (h) => ({
      method: "GET",
      path: `/api/v1/actors?labelSelector=${wtf8PercentEncode(h)}&cursor=${wtf8PercentEncode(h)}`
    }),
    (h) => ({ method: "GET", path: `/api/v1/actors/${wtf8PercentEncode(h)}` }),
    (h, m) => ({
      method: "POST",
      path: "/api/v1/connectors",
      body: JSON.stringify({
        namespace: "root",
        name: m,
        definition: { type: "demo", display_name: h, auth: { type: "none" } }
      }),
      marker: m
    }),
    (h) => ({ method: "GET", path: `/api/v1/connectors/${connectorId}/versions/${wtf8PercentEncode(h)}` }),
    (h) => ({
      method: "POST",
      path: `/api/v1/connectors/${connectorId}/versions`,
      body: JSON.stringify({ definition: { type: h, auth: { type: "none" } } })
    }),
    (h, m) => ({
      method: "POST",
      path: "/api/v1/connections",
      body: JSON.stringify({ connectorId: keyConnectorId, name: m, credentials: { api_key: `k${h}` } }),
      marker: m
    }),
    (h, m) => ({
      method: "POST",
      path: "/api/v1/connections",
      body: JSON.stringify({ connectorId: h, name: m }),
      marker: m
    }),
    (h) => ({
      method: "PUT",
      path: `/api/v1/connections/${connectionId}/credentials`,
      body: JSON.stringify({ credentials: { api_key: `k${h}` } })
    }),
    (h) => ({ method: "POST", path: `/api/v1/connections/${wtf8PercentEncode(h)}/_disconnect` }),
    (h) => ({
      method: "POST",
      path: `/api/v1/connections/${connectionId}/_proxy`,
      body: JSON.stringify({ url: "http://127.0.0.1:9/x", method: "POST", headers: { "x-h": h }, bodyJson: { v: h } })
    }),
    (h) => ({
      method: "GET",
      path: `/api/v1/connections?name=${wtf8PercentEncode(h)}&connectorId=${wtf8PercentEncode(h)}&state=${wtf8PercentEncode(h)}`
    }),
    (h, m) => ({
      method: "POST",
      path: "/api/v1/keys",
      body: JSON.stringify({ namespace: "root", name: m, labels: { a: h } }),
      marker: m
    }),
    (h) => ({
      method: "GET",
      path: `/api/v1/metrics/request-events?statusCode=${wtf8PercentEncode(h)}&start=${wtf8PercentEncode(h)}&limit=${wtf8PercentEncode(h)}`
    }),
    (h) => ({ method: "GET", path: `/api/v1/search/resources?q=${wtf8PercentEncode(h)}` }),
    (h) => ({ method: "GET", path: `/api/v1/rate-limits?label_selector=${wtf8PercentEncode(h)}` }),
    (h) => ({ method: "POST", path: "/api/v1/notifications/_viewed", body: JSON.stringify({ ids: [h] }) })
  ]

  it("~20 routes: never 5xx, every 4xx the standard body", async () => {
    await fc.assert(
      fc.asyncProperty(hostileText, fc.integer({ min: 0, max: routes.length - 1 }), async (h, index) => {
        await send(routes[index]!(h, `fz${rand()}`))
      }),
      { numRuns: 300, seed: 1313 }
    )
    // Every route at least once with a NUL and a lone surrogate.
    for (const route of routes) {
      await send(route("a\u0000b", `fz${rand()}`))
      await send(route("a\ud800b", `fz${rand()}`))
    }
  }, 300_000)

  it("deep JSON, wrong content types, empty action bodies and hostile token claims are 4xx (or accepted), never 5xx", async () => {
    for (const depth of [65, 1_000, 100_000]) {
      expect(
        await send({
          method: "POST",
          path: "/api/v1/namespaces",
          body: `{"path":"root.deep","annotations":${deepJson(depth)}}`
        })
      ).toBe(400)
      expect(
        await send({
          method: "POST",
          path: `/api/v1/connections/${connectionId}/_proxy`,
          body: `{"url":"http://127.0.0.1:9/x","method":"POST","bodyJson":${deepJson(depth)}}`
        })
      ).toBe(400)
    }
    expect(
      await send({ method: "POST", path: "/api/v1/namespaces", body: "path=root.x", contentType: "text/plain" })
    ).toBe(415)
    expect(
      await send({
        method: "POST",
        path: "/api/v1/namespaces",
        body: "path=root.x",
        contentType: "application/x-www-form-urlencoded"
      })
    ).toBe(415)
    for (const sub of ["a\u0000b", "a\r\nb", "a\ud800", "\u001b"]) {
      expect(await send({ method: "GET", path: "/api/v1/auth/whoami", token: await svc.sign(sub) })).toBe(401)
      expect(
        await send({ method: "GET", path: "/api/v1/auth/whoami", token: await svc.sign("admin", { namespace: sub }) })
      ).toBe(401)
    }
    const r = resources(svc)
    const victim = await r.connection(keyConnectorId, { credentials: { api_key: "k3y" } })
    expect(await send({ method: "POST", path: `/api/v1/connections/${victim.id}/_disconnect` })).toBeLessThan(300)
  }, 120_000)

  it("nothing a refused request named is stored, and the service still answers", async () => {
    expect(refusedMarkers.length).toBeGreaterThan(10)
    const r = resources(svc)
    const stored = new Set<string>()
    for (const segment of ["namespaces", "actors", "connectors", "connections", "keys"]) {
      for (const item of await r.listAll(segment, { limit: "1000" })) stored.add(item.name)
    }
    for (const marker of refusedMarkers) expect(stored.has(marker), marker).toBe(false)
    expectStatus(await svc.call("GET", "/api/v1/auth/whoami"), 200)
    expect((await fetch(`http://127.0.0.1:${svc.ports.api}/ping`)).status).toBe(200)
    expect(statuses.get(500) ?? 0).toBe(0)
    expect(svc.output()).not.toContain("unhandled failure while serving a request")
  }, 120_000)
})
