/**
 * Permissions on the resource routes over real HTTP (issue 3; spec 5, 4.1, API-CONVENTIONS
 * "Errors"): an actor of `root.acme` and an admin token restricted to `root.acme.**` see nothing
 * of `root.other` in lists, reads or search, cannot create there, and anonymous calls get 401.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  expectError,
  expectStatus,
  launch,
  type Resource,
  resources,
  type SearchHitBody,
  type Svc
} from "../support/Api.ts"

let svc: Svc
let admin: ReturnType<typeof resources>
const acmeOnly = [{ namespace: "root.acme.**", resources: ["*"], verbs: ["*"] }]
const segments = ["connections", "connectors", "namespaces", "keys", "actors", "rate-limits"] as const
type Segment = (typeof segments)[number]
const acme = {} as Record<Segment, string>
const other = {} as Record<Segment, string>
const tokens: Record<string, string> = {}

const inAcme = (namespace: string) => namespace === "root.acme" || namespace.startsWith("root.acme.")

/** One resource of every type in `ns`, each named `shared` where names are writable. */
const populate = async (ns: string, into: Record<Segment, string>, externalId: string) => {
  await admin.namespace(ns)
  await admin.namespace(`${ns}.team`)
  const connector = await admin.publishedConnector(ns, { name: "shared" })
  into.connectors = connector.id
  into.connections = (await admin.connection(connector.id, { name: "shared", namespace: `${ns}.team` })).id
  into.namespaces = ns
  into.keys = (await admin.create("keys", { namespace: ns, name: "shared" })).id
  const permissions = [{ namespace: `${ns}.**`, resources: ["*"], verbs: ["*"] }]
  into.actors = (await admin.create("actors", { externalId, namespace: ns, name: "shared", permissions })).id
  into["rate-limits"] = (
    await admin.create("rate-limits", {
      namespace: ns,
      name: "shared",
      definition: { algorithm: { fixed_window: { window: "1m", limit: 1 } } }
    })
  ).id
}

beforeAll(async () => {
  svc = await launch("svc-e2e-access-")
  admin = resources(svc)
  await populate("root.acme", acme, "acme-user")
  await populate("root.other", other, "other-user")
  tokens.actor = await svc.sign("acme-user")
  tokens.restricted = await svc.sign("admin", { permissions: acmeOnly })
}, 120_000)

afterAll(async () => {
  await svc?.stop()
})

describe.each([
  ["an actor of root.acme", "actor"],
  ["the admin actor's token restricted to root.acme.**", "restricted"]
])("%s", (_, which) => {
  const as = () => resources(svc, tokens[which]!)
  const call = (method: string, path: string, body?: unknown) =>
    svc.call(method, path, { token: tokens[which]!, ...(body === undefined ? {} : { body }) })

  it.each(segments)("lists only root.acme %s", async (segment) => {
    const items = await as().listAll<Resource>(segment, { limit: "1000" })
    expect(items.map((item) => item.id)).toContain(acme[segment])
    expect(items.filter((item) => !inAcme(item.namespace)).map((item) => item.id)).toEqual([])
    const selectorParam = segment === "rate-limits" ? "label_selector" : "labelSelector"
    const selected = await as().list(segment, { [selectorParam]: "svc/ns/-/id=root.other" })
    expect(selected.items).toEqual([])
    const named = await as().list(segment, { name: "shared" })
    expect(named.items.every((item) => inAcme(item.namespace))).toBe(true)
  })

  it.each(segments)("answers 404 for a root.other %s by id, its labels and its updates", async (segment) => {
    const base = `/api/v1/${segment}/${other[segment]}`
    expectError(await call("GET", base), 404, "not_found")
    expectError(await call("GET", `${base}/labels`), 404, "not_found")
    expectError(await call("PUT", `${base}/labels/team`, { value: "x" }), 404, "not_found")
    expectError(await call("PATCH", base, { labels: { team: "x" } }), 404, "not_found")
    expect(expectStatus<Resource>(await svc.call("GET", base), 200).labels.team).toBeUndefined()
    expect((await call("GET", `/api/v1/${segment}/${acme[segment]}`)).status).toBe(200)
  })

  it("cannot create in root.other but can in root.acme", async () => {
    const forbidden: Array<[string, unknown]> = [
      ["namespaces", { path: "root.other.new" }],
      ["keys", { namespace: "root.other" }],
      ["actors", { externalId: `x-${which}`, namespace: "root.other" }],
      ["connectors", { namespace: "root.other", definition: { type: "demo", auth: { type: "none" } } }],
      [
        "rate-limits",
        { namespace: "root.other", definition: { algorithm: { fixed_window: { window: "1m", limit: 1 } } } }
      ]
    ]
    for (const [segment, body] of forbidden)
      expect((await call("POST", `/api/v1/${segment}`, body)).status, segment).toBe(403)
    expect((await call("DELETE", `/api/v1/keys/${other.keys}`)).status).toBe(404)
    expect((await svc.call("GET", `/api/v1/keys/${other.keys}`)).status).toBe(200)
    const created = expectStatus<Resource>(await call("POST", "/api/v1/keys", { namespace: "root.acme.team" }), 201)
    expect(created.namespace).toBe("root.acme.team")
  })

  it("finds nothing of root.other through the admin-api search", async () => {
    const reply = await svc.call<{ items: Array<SearchHitBody> }>("GET", "/api/v1/search/resources?q=shared", {
      token: tokens[which]!,
      service: "admin-api"
    })
    const hits = expectStatus<{ items: Array<SearchHitBody> }>(reply, 200).items
    expect(hits.filter((hit) => !inAcme(hit.namespace))).toEqual([])
    expect(hits.map((hit) => hit.id)).toContain(acme.keys)
  })
})

describe("the unrestricted admin", () => {
  it("sees both tenants in search and lists", async () => {
    const hits = expectStatus<{ items: Array<SearchHitBody> }>(
      await svc.call("GET", "/api/v1/search/resources?q=shared&resourceType=keys", { service: "admin-api" }),
      200
    ).items
    expect(hits.map((hit) => hit.id).sort()).toEqual([acme.keys, other.keys].sort())
    expect(hits.every((hit) => hit.match === "exact" && hit.resourceType === "keys")).toBe(true)
    const connections = await admin.list<Resource>("connections", { name: "shared" })
    expect(connections.items.map((item) => item.id).sort()).toEqual([acme.connections, other.connections].sort())
  })
})

describe("narrower grants", () => {
  it("enforce verbs and resource ids", async () => {
    const second = await admin.create("keys", { namespace: "root.acme" })
    const token = await svc.sign("admin", {
      permissions: [
        { namespace: "root.acme.**", resources: ["keys"], verbs: ["get", "list"], resourceIds: [acme.keys] }
      ]
    })
    const keys = await resources(svc, token).list<Resource>("keys", {})
    expect(keys.items.map((item) => item.id)).toEqual([acme.keys])
    expect((await svc.call("GET", `/api/v1/keys/${acme.keys}`, { token })).status).toBe(200)
    expectError(await svc.call("GET", `/api/v1/keys/${second.id}`, { token }), 404, "not_found")
    expect((await svc.call("POST", "/api/v1/keys", { token, body: { namespace: "root.acme" } })).status).toBe(403)
    expect((await svc.call("PATCH", `/api/v1/keys/${acme.keys}`, { token, body: { name: "renamed" } })).status).toBe(
      403
    )
  })
})

describe("anonymous callers", () => {
  it("get 401 with the standard body on every resource route", async () => {
    const routes: Array<[string, string, "api" | "admin-api"]> = [
      ...segments.map((segment): [string, string, "api"] => ["GET", `/api/v1/${segment}`, "api"]),
      ["GET", `/api/v1/keys/${acme.keys}`, "api"],
      ["GET", `/api/v1/keys/${acme.keys}/labels`, "api"],
      ["POST", "/api/v1/keys", "api"],
      ["GET", "/api/v1/namespaces/root", "api"],
      ["GET", "/api/v1/search/resources?q=shared", "admin-api"]
    ]
    for (const [method, path, service] of routes) {
      const reply = await svc.call(method, path, {
        token: null,
        service,
        ...(method === "POST" ? { body: { namespace: "root.acme" } } : {})
      })
      expect(reply.status, `${method} ${path}`).toBe(401)
      expect(reply.body).toEqual({ error: "a bearer token is required", code: "unauthorized" })
    }
  })
})
