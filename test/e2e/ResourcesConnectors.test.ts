/**
 * Connectors, their versions, connections and rate-limit resources over real HTTP (issue 3;
 * spec 2.1, 2.7, 2.8, 3.2, 4.1, 4.6, 7).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConnectionBody,
  type ConnectorBody,
  definition,
  type ErrorBody,
  expectError,
  expectStatus,
  launch,
  type PageBody,
  rand,
  type RateLimitBody,
  resources,
  type Svc,
  type VersionBody
} from "../support/Api.ts"

let svc: Svc
let r: ReturnType<typeof resources>

beforeAll(async () => {
  svc = await launch("svc-e2e-connectors-")
  r = resources(svc)
}, 90_000)

afterAll(async () => {
  await svc?.stop()
})

const freshNamespace = (prefix: string, extra: Record<string, unknown> = {}) => r.freshNamespace(prefix, extra)

const version = async (connectorId: string, v: number) =>
  expectStatus<VersionBody>(await svc.call("GET", `/api/v1/connectors/${connectorId}/versions/${v}`), 200)

describe("connectors and versions (spec 3.2)", () => {
  it("creates version 1 as a draft with the connector's identity labels", async () => {
    const ns = await freshNamespace("cx")
    const created = await r.connector(ns, { name: "gh", definition: definition("github"), annotations: { a: "b" } })
    expect(created).toMatchObject({ name: "gh", namespace: ns, version: 1, state: "draft", type: "github" })
    expect(created.id.startsWith("cxr_")).toBe(true)
    expect(created.annotations).toEqual({ a: "b" })
    expect(created.labels).toMatchObject({ "svc/cxr/-/id": created.id, "svc/cxr/-/name": "gh", "svc/cxr/-/ns": ns })
    const v1 = await version(created.id, 1)
    expect(v1).toMatchObject({ connectorId: created.id, version: 1, state: "draft" })
    expect(v1.definition).toMatchObject(definition("github"))
    expect(await r.get<ConnectorBody>("connectors", created.id)).toEqual(created)
  })

  it("accepts connections only on a primary version; publishing demotes the previous primary to active", async () => {
    const ns = await freshNamespace("pub")
    const connector = await r.connector(ns)
    expectError(
      await svc.call("POST", "/api/v1/connections", { body: { connectorId: connector.id } }),
      409,
      "no_primary_version"
    )
    expect(await r.publish(connector.id, 1)).toMatchObject({ connectorId: connector.id, version: 1, state: "primary" })
    const first = await r.connection(connector.id)
    expect(first).toMatchObject({
      namespace: ns,
      connectorId: connector.id,
      connectorVersion: 1,
      state: "configured",
      healthState: "healthy",
      setupStepId: null
    })
    expect(first.id.startsWith("cxn_")).toBe(true)

    const v2 = expectStatus<VersionBody>(
      await svc.call("POST", `/api/v1/connectors/${connector.id}/versions`, { body: { definition: definition() } }),
      201
    )
    expect(v2).toMatchObject({ connectorId: connector.id, version: 2, state: "draft" })
    expect((await r.connection(connector.id)).connectorVersion).toBe(1)
    await r.publish(connector.id, 2)
    expect((await version(connector.id, 1)).state).toBe("active")
    expect((await version(connector.id, 2)).state).toBe("primary")
    expect(await r.get<ConnectorBody>("connectors", connector.id)).toMatchObject({ version: 2, state: "primary" })
    expect((await r.connection(connector.id)).connectorVersion).toBe(2)
    expect((await r.get<ConnectionBody>("connections", first.id)).connectorVersion).toBe(1)
    const listed = expectStatus<{ items: Array<VersionBody> }>(
      await svc.call("GET", `/api/v1/connectors/${connector.id}/versions`),
      200
    )
    expect(listed.items.map((v) => [v.version, v.state])).toEqual([
      [2, "primary"],
      [1, "active"]
    ])
  })

  it("takes no name on a version and refuses unknown versions", async () => {
    const connector = await r.connector(await freshNamespace("vn"))
    const named = await svc.call("POST", `/api/v1/connectors/${connector.id}/versions`, {
      body: { definition: definition(), name: "x" }
    })
    expectError(named, 400, "invalid_request")
    expectError(await svc.call("GET", `/api/v1/connectors/${connector.id}/versions/9`), 404, "not_found")
    expectError(await svc.call("GET", `/api/v1/connectors/cxr_missing${rand()}`), 404, "not_found")
  })
})

describe("connections (spec 2.7)", () => {
  it("default to the connector's namespace and must stay in its subtree", async () => {
    const ns = await freshNamespace("cns")
    const sibling = await freshNamespace("cns")
    await r.namespace(`${ns}.team`)
    const connector = await r.publishedConnector(ns)
    expect((await r.connection(connector.id)).namespace).toBe(ns)
    const child = await r.connection(connector.id, { namespace: `${ns}.team` })
    expect(child.namespace).toBe(`${ns}.team`)
    expect(child.labels["svc/cxn/-/ns"]).toBe(`${ns}.team`)
    for (const outside of [sibling, "root"]) {
      const reply = await svc.call("POST", "/api/v1/connections", {
        body: { connectorId: connector.id, namespace: outside }
      })
      expectError(reply, 400, "namespace_outside_connector")
    }
  })

  it("need the credentials of the connector's auth method; authorization-code connectors go through _initiate", async () => {
    const ns = await freshNamespace("auth")
    const apiKey = await r.publishedConnector(ns, {
      definition: { type: "demo", auth: { type: "api_key", placement: "bearer" } }
    })
    expectError(
      await svc.call("POST", "/api/v1/connections", { body: { connectorId: apiKey.id } }),
      400,
      "credentials_required"
    )
    const none = await r.publishedConnector(ns)
    expectError(
      await svc.call("POST", "/api/v1/connections", { body: { connectorId: none.id, credentials: { api_key: "k" } } }),
      400,
      "credentials_not_accepted"
    )
    const interactive = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: {
          type: "oauth2",
          grant_type: "authorization_code",
          authorization_endpoint: "https://provider.example/authorize",
          token_endpoint: "https://provider.example/token"
        }
      }
    })
    expectError(
      await svc.call("POST", "/api/v1/connections", { body: { connectorId: interactive.id } }),
      400,
      "interactive_auth_required"
    )
  })

  it("renames keeping id and URL, answer 404 for unknown ids, and reject unknown body fields", async () => {
    const connector = await r.publishedConnector(await freshNamespace("cr"))
    const created = await r.connection(connector.id, { name: "first" })
    const renamed = expectStatus<ErrorBody & { id: string; name: string }>(
      await svc.call("PATCH", `/api/v1/connections/${created.id}`, { body: { name: "second" } }),
      200
    )
    expect([renamed.id, renamed.name]).toEqual([created.id, "second"])
    expectError(await svc.call("GET", `/api/v1/connections/cxn_missing${rand()}`), 404, "not_found")
    expectError(
      await svc.call("PATCH", `/api/v1/connections/${created.id}`, { body: { nmae: "x" } }),
      400,
      "invalid_request"
    )
  })
})

describe("rate-limit resources (spec 2.8, 4.6)", () => {
  const post = async (definitionBody: unknown, extra: Record<string, unknown> = {}) =>
    svc.call<RateLimitBody & ErrorBody>("POST", "/api/v1/rate-limits", {
      body: { namespace: await freshNamespace("rl"), definition: definitionBody, ...extra }
    })

  it("materialises the defaults of the definition", async () => {
    const created = expectStatus<RateLimitBody>(
      await post({ algorithm: { fixed_window: { window: "1m", limit: 10 } } }, { labels: { tier: "gold" } }),
      201
    )
    expect(created.id.startsWith("rl_")).toBe(true)
    expect(created.name).toBe(created.id)
    expect(created.definition).toEqual({
      mode: "enforce",
      selector: { request_types: ["proxy", "probe"] },
      bucket: { dimensions: [] },
      algorithm: { fixed_window: { window: "1m", limit: 10 } }
    })
    expect(created.labels).toMatchObject({ tier: "gold", "svc/rl/-/id": created.id, "svc/rl/-/ns": created.namespace })
    const full = {
      mode: "observe",
      selector: {
        label_selector: "env=prod,!test",
        methods: ["GET", "POST"],
        path_match: { kind: "glob", value: "/repos/*/issues" },
        request_types: ["proxy"]
      },
      bucket: { dimensions: ["connection", "labels/team"] },
      algorithm: { sliding_window: { window: "30s", limit: 5, mode: "log" } }
    }
    expect(expectStatus<RateLimitBody>(await post(full), 201).definition).toEqual(full)
  })

  it.each([
    [
      "an explicit empty request_types",
      { selector: { request_types: [] }, algorithm: { token_bucket: { capacity: 1, refill_rate: 1 } } }
    ],
    ["no algorithm", { algorithm: {} }],
    [
      "two algorithms",
      { algorithm: { fixed_window: { window: "1m", limit: 1 }, token_bucket: { capacity: 1, refill_rate: 1 } } }
    ],
    ["a bad duration", { algorithm: { fixed_window: { window: "abc", limit: 1 } } }],
    [
      "an uncompilable regex",
      {
        selector: { path_match: { kind: "regex", value: "(" } },
        algorithm: { fixed_window: { window: "1m", limit: 1 } }
      }
    ],
    [
      "a bad label selector",
      { selector: { label_selector: "a!b" }, algorithm: { fixed_window: { window: "1m", limit: 1 } } }
    ],
    ["an unknown field", { algorithm: { fixed_window: { window: "1m", limit: 1 } }, priority: 1 }]
  ])("rejects %s with 400", async (_, bad) => {
    const body = expectError(await post(bad), 400, "invalid_request")
    expect(body.details?.length ?? 0).toBeGreaterThan(0)
    expect(body.details?.every((d) => d.field.startsWith("body.definition"))).toBe(true)
  })

  it("keeps the namespace immutable, patches the definition alone, deletes with 204", async () => {
    const created = expectStatus<RateLimitBody>(
      await post(
        { algorithm: { fixed_window: { window: "1m", limit: 10 } } },
        { labels: { tier: "gold" }, annotations: { n: "1" } }
      ),
      201
    )
    const path = `/api/v1/rate-limits/${created.id}`
    expectError(await svc.call("PATCH", path, { body: { namespace: "root" } }), 400, "namespace_immutable")
    const patched = expectStatus<RateLimitBody>(
      await svc.call("PATCH", path, {
        body: { definition: { mode: "observe", algorithm: { token_bucket: { capacity: 5, refill_rate: 0.5 } } } }
      }),
      200
    )
    expect(patched.definition).toEqual({
      mode: "observe",
      selector: { request_types: ["proxy", "probe"] },
      bucket: { dimensions: [] },
      algorithm: { token_bucket: { capacity: 5, refill_rate: 0.5 } }
    })
    expect(patched.labels).toEqual(created.labels)
    expect(patched.annotations).toEqual({ n: "1" })
    expect(patched.namespace).toBe(created.namespace)
    expect(await r.get("rate-limits", created.id)).toEqual(patched)
    expect((await svc.call("DELETE", path)).status).toBe(204)
    expectError(await svc.call("GET", path), 404, "not_found")
    expectError(await svc.call("DELETE", path), 404, "not_found")
  })

  it("lists by namespace and label_selector", async () => {
    const ns = await freshNamespace("rll")
    const gold = await r.create("rate-limits", {
      namespace: ns,
      labels: { tier: "gold" },
      definition: { algorithm: { fixed_window: { window: "1m", limit: 1 } } }
    })
    await r.create("rate-limits", {
      namespace: ns,
      definition: { algorithm: { fixed_window: { window: "1m", limit: 1 } } }
    })
    const page = expectStatus<PageBody<RateLimitBody>>(
      await svc.call("GET", `/api/v1/rate-limits?namespace=${ns}&label_selector=tier%3Dgold`),
      200
    )
    expect(page.items.map((item) => item.id)).toEqual([gold.id])
    expect(page.cursor).toBeUndefined()
    const bad = expectError(await svc.call("GET", `/api/v1/rate-limits?label_selector=a!b`), 400, "invalid_request")
    expect(bad.details?.[0]?.field).toBe("query.label_selector")
  })
})
