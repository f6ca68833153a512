/**
 * The resource model over real HTTP (issue 3; spec 2.1–2.4, 4.1, 7, 8.1): namespaces, names,
 * labels and annotations with their sub-resources, implicit system labels and carry-forward,
 * against one embedded-default `svc serve`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConnectionBody,
  type ErrorBody,
  expectError,
  expectStatus,
  launch,
  type NamespaceBody,
  rand,
  type Reply,
  type Resource,
  resources,
  type Svc,
  systemLabels,
  userLabels
} from "../support/Api.ts"

const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/
const fixedWindow = { algorithm: { fixed_window: { window: "1m", limit: 10 } } }

let svc: Svc
let r: ReturnType<typeof resources>

beforeAll(async () => {
  svc = await launch("svc-e2e-resources-")
  r = resources(svc)
}, 90_000)

afterAll(async () => {
  await svc?.stop()
})

/** A fresh namespace directly under root. */
const freshNamespace = (prefix: string, extra: Record<string, unknown> = {}) => r.freshNamespace(prefix, extra)

/** The create payload of one resource type in `ns` (connections get a published connector there). */
const payload = async (segment: string, ns: string, name?: string): Promise<Record<string, unknown>> => {
  const named = name === undefined ? {} : { name }
  switch (segment) {
    case "actors":
      return { externalId: `ext-${rand()}`, namespace: ns, ...named }
    case "connectors":
      return { namespace: ns, definition: { type: "demo", auth: { type: "none" } }, ...named }
    case "connections":
      return { connectorId: (await r.publishedConnector(ns)).id, ...named }
    case "keys":
      return { namespace: ns, ...named }
    default:
      return { namespace: ns, definition: fixedWindow, ...named }
  }
}

const typed = [
  { segment: "actors", rt: "act", deletable: true },
  { segment: "connectors", rt: "cxr", deletable: false },
  { segment: "connections", rt: "cxn", deletable: false },
  { segment: "keys", rt: "key", deletable: true },
  { segment: "rate-limits", rt: "rl", deletable: true }
] as const

const expectNameConflict = (reply: Reply<unknown>) => {
  const body = expectError(reply, 409, "name_conflict")
  expect(Object.keys(body).sort()).toEqual(["code", "error"])
  expect(body.error.toLowerCase()).not.toMatch(/constraint|duplicate key|unique/)
}

describe("namespaces", () => {
  it("creates a child namespace whose id, path and namespace are the path and whose name is the final segment", async () => {
    const parent = `root.ns${rand()}`
    const created = await r.namespace(parent, { labels: { team: "alpha" }, annotations: { note: "first" } })
    expect(created.id).toBe(parent)
    expect(created.path).toBe(parent)
    expect(created.namespace).toBe(parent)
    expect(created.name).toBe(parent.slice(5))
    expect(created.annotations).toEqual({ note: "first" })
    expect(created.labels).toMatchObject({
      team: "alpha",
      "svc/ns/-/id": parent,
      "svc/ns/-/name": parent.slice(5),
      "svc/ns/-/ns": parent
    })
    expect(created.createdAt).toMatch(iso)
    expect(created.updatedAt).toMatch(iso)
    expect(await r.get<NamespaceBody>("namespaces", parent)).toEqual(created)

    const child = await r.namespace(`${parent}.eu-1`)
    expect(child).toMatchObject({
      id: `${parent}.eu-1`,
      path: `${parent}.eu-1`,
      name: "eu-1",
      namespace: `${parent}.eu-1`
    })
    expect(child.labels).toMatchObject({
      "svc/ns/-/id": `${parent}.eu-1`,
      "svc/ns/-/name": "eu-1",
      "svc/ns/-/ns": `${parent}.eu-1`,
      "svc/ns/team": "alpha"
    })
  })

  it("needs an existing parent and a free path", async () => {
    expectError(
      await svc.call("POST", "/api/v1/namespaces", { body: { path: `root.gone${rand()}.x` } }),
      400,
      "namespace_not_found"
    )
    const ns = await freshNamespace("dup")
    expectNameConflict(await svc.call("POST", "/api/v1/namespaces", { body: { path: ns } }))
  })

  it("keeps the name read-only and replaces user labels on PATCH while system labels stay", async () => {
    const ns = await freshNamespace("patch", { labels: { a: "1", b: "2" } })
    expectError(await svc.call("PATCH", `/api/v1/namespaces/${ns}`, { body: { name: "other" } }), 400, "name_read_only")
    const before = await r.get<NamespaceBody>("namespaces", ns)
    const patched = expectStatus<NamespaceBody>(
      await svc.call("PATCH", `/api/v1/namespaces/${ns}`, { body: { labels: { c: "3" } } }),
      200
    )
    expect(userLabels(patched.labels)).toEqual({ c: "3" })
    expect(systemLabels(patched.labels)).toEqual(systemLabels(before.labels))
    expect(patched.name).toBe(before.name)
  })

  it("refuses to delete a namespace with live children or resources and never deletes root", async () => {
    const ns = await freshNamespace("del")
    await r.namespace(`${ns}.child`)
    expectError(await svc.call("DELETE", `/api/v1/namespaces/${ns}`), 409, "namespace_not_empty")
    expect((await svc.call("DELETE", `/api/v1/namespaces/${ns}.child`)).status).toBe(204)
    expectError(await svc.call("GET", `/api/v1/namespaces/${ns}.child`), 404, "not_found")
    const key = await r.create<Resource>("keys", { namespace: ns })
    expectError(await svc.call("DELETE", `/api/v1/namespaces/${ns}`), 409, "namespace_not_empty")
    expect((await svc.call("DELETE", `/api/v1/keys/${key.id}`)).status).toBe(204)
    expect((await svc.call("DELETE", `/api/v1/namespaces/${ns}`)).status).toBe(204)
    expectError(await svc.call("GET", `/api/v1/namespaces/${ns}`), 404, "not_found")
    const root = await svc.call("DELETE", "/api/v1/namespaces/root")
    expect(root.status).toBeGreaterThanOrEqual(400)
    expect((await svc.call("GET", "/api/v1/namespaces/root")).status).toBe(200)
  })
})

describe.each(typed)("names of $segment (spec 2.2)", ({ segment, rt }) => {
  it("uses the generated id as the name when none is given", async () => {
    const ns = await freshNamespace("nm")
    const created = await r.create<Resource>(segment, await payload(segment, ns))
    expect(created.id.startsWith(`${rt}_`)).toBe(true)
    expect(created.name).toBe(created.id)
    expect(created.namespace).toBe(ns)
    expect(created.labels).toMatchObject({
      [`svc/${rt}/-/id`]: created.id,
      [`svc/${rt}/-/name`]: created.id,
      [`svc/${rt}/-/ns`]: ns
    })
    expect(created.createdAt).toMatch(iso)
    expect(created.updatedAt).toMatch(iso)
    expect(await r.get(segment, created.id)).toEqual(created)
  })

  it("answers 409 without database detail on a duplicate name in one namespace, create or rename", async () => {
    const ns = await freshNamespace("dup")
    const other = await freshNamespace("dup")
    await r.create(segment, await payload(segment, ns, "taken"))
    expectNameConflict(await svc.call("POST", `/api/v1/${segment}`, { body: await payload(segment, ns, "taken") }))
    const second = await r.create(segment, await payload(segment, ns, "second"))
    expectNameConflict(await svc.call("PATCH", `/api/v1/${segment}/${second.id}`, { body: { name: "taken" } }))
    expect((await r.create(segment, await payload(segment, other, "taken"))).name).toBe("taken")
  })

  it("renames keeping the id and URL and refreshing the name label", async () => {
    const ns = await freshNamespace("ren")
    const created = await r.create(segment, await payload(segment, ns, "before"))
    const renamed = expectStatus<Resource>(
      await svc.call("PATCH", `/api/v1/${segment}/${created.id}`, { body: { name: "after" } }),
      200
    )
    expect(renamed.id).toBe(created.id)
    expect(renamed.name).toBe("after")
    expect(renamed.labels).toEqual({ ...created.labels, [`svc/${rt}/-/name`]: "after" })
    expect(await r.get(segment, created.id)).toEqual(renamed)
  })
})

describe.each(typed.filter((t) => t.deletable))("deleting $segment (spec 2.2 rule 4)", ({ segment }) => {
  it("releases the name", async () => {
    const ns = await freshNamespace("rel")
    const first = await r.create(segment, await payload(segment, ns, "reused"))
    expect((await svc.call("DELETE", `/api/v1/${segment}/${first.id}`)).status).toBe(204)
    expectError(await svc.call("GET", `/api/v1/${segment}/${first.id}`), 404, "not_found")
    const again = await r.create(segment, await payload(segment, ns, "reused"))
    expect(again.name).toBe("reused")
    expect(again.id).not.toBe(first.id)
  })
})

describe("names across types", () => {
  it("allows one name on every type in the same namespace", async () => {
    const ns = await freshNamespace("xt")
    for (const { segment } of typed)
      expect((await r.create(segment, await payload(segment, ns, "shared"))).name).toBe("shared")
  })
})

describe("labels and annotations (spec 2.3, 8.1)", () => {
  const createKey = async (extra: Record<string, unknown>) =>
    svc.call<ErrorBody>("POST", "/api/v1/keys", { body: { namespace: await freshNamespace("lbl"), ...extra } })

  it("rejects user labels under svc/ and values longer than 63 characters", async () => {
    const reserved = expectError(await createKey({ labels: { "svc/x": "1" } }), 400, "invalid_request")
    expect(reserved.details?.map((d) => d.field)).toContain("body.labels.svc/x")
    expect((await createKey({ labels: { big: "v".repeat(63) } })).status).toBe(201)
    const long = expectError(await createKey({ labels: { big: "v".repeat(64) } }), 400, "invalid_request")
    expect(long.details?.map((d) => d.field)).toContain("body.labels.big")
    expectError(await createKey({ labels: { "Bad Key": "1" } }), 400, "invalid_request")
  })

  it("caps annotations at 262144 UTF-8 bytes of keys and values", async () => {
    expect((await createKey({ annotations: { a: "x".repeat(262_143) } })).status).toBe(201)
    expectError(await createKey({ annotations: { a: "x".repeat(262_144) } }), 400, "invalid_request")
    expectError(await createKey({ annotations: { a: "é".repeat(131_072) } }), 400, "invalid_request")
    const full = expectStatus<Resource>(await createKey({ annotations: { a: "x".repeat(262_143) } }), 201)
    const over = await svc.call("PUT", `/api/v1/keys/${full.id}/annotations/b`, { body: { value: "y" } })
    expect(over.status).toBe(400)
  })

  it("replaces a connection's user labels on PATCH and keeps its system labels", async () => {
    const ns = await freshNamespace("cxl", { labels: { env: "dev" } })
    const connector = await r.publishedConnector(ns, { labels: { vendor: "acme" } })
    const created = await r.connection(connector.id, { labels: { a: "1", b: "2" } })
    expect(userLabels(created.labels)).toEqual({ a: "1", b: "2" })
    const patched = expectStatus<ConnectionBody>(
      await svc.call("PATCH", `/api/v1/connections/${created.id}`, { body: { labels: { c: "3" } } }),
      200
    )
    expect(userLabels(patched.labels)).toEqual({ c: "3" })
    expect(systemLabels(patched.labels)).toEqual(systemLabels(created.labels))
    expect(patched.labels).toMatchObject({ "svc/ns/env": "dev", "svc/cxr/vendor": "acme" })
    const reserved = await svc.call("PATCH", `/api/v1/connections/${created.id}`, {
      body: { labels: { "svc/cxn/-/name": "evil" } }
    })
    expectError(reserved, 400, "invalid_request")
  })
})

describe("label and annotation sub-resources (spec 4.1)", () => {
  const ids: Record<string, string> = {}
  // The namespace goes last: its label changes are carried to the other five asynchronously
  // (spec 2.4), which must not land while their own label round trips are being compared.
  const tokens = {
    actors: "act",
    connectors: "cxr",
    connections: "cxn",
    keys: "key",
    "rate-limits": "rl",
    namespaces: "ns"
  }

  beforeAll(async () => {
    const ns = await freshNamespace("sub", { annotations: { note: "first" } })
    ids.namespaces = ns
    const extra = { annotations: { note: "first" } }
    ids.actors = (await r.create("actors", { ...(await payload("actors", ns)), ...extra })).id
    ids.connectors = (await r.create("connectors", { ...(await payload("connectors", ns)), ...extra })).id
    ids.connections = (await r.create("connections", { ...(await payload("connections", ns)), ...extra })).id
    ids.keys = (await r.create("keys", { ...(await payload("keys", ns)), ...extra })).id
    ids["rate-limits"] = (await r.create("rate-limits", { ...(await payload("rate-limits", ns)), ...extra })).id
  }, 60_000)

  it.each(Object.entries(tokens))("reads, sets and removes labels of %s", async (segment, rt) => {
    const id = ids[segment]!
    const base = `/api/v1/${segment}/${id}/labels`
    const resource = await r.get(segment, id)
    const all = expectStatus<Record<string, string>>(await svc.call("GET", base), 200)
    expect(all).toEqual(resource.labels)
    expect(all[`svc/${rt}/-/id`]).toBe(id)
    expect(all[`svc/${rt}/-/ns`]).toBe(ids.namespaces)
    const key = "example.com%2Fteam"
    const entry = { key: "example.com/team", value: "blue" }
    expect(expectStatus(await svc.call("PUT", `${base}/${key}`, { body: { value: "blue" } }), 200)).toEqual(entry)
    expect(expectStatus(await svc.call("GET", `${base}/${key}`), 200)).toEqual(entry)
    expect(expectStatus(await svc.call("PUT", `${base}/${key}`, { body: { value: "green" } }), 200)).toEqual({
      ...entry,
      value: "green"
    })
    expect(expectStatus(await svc.call("GET", base), 200)).toEqual({ ...resource.labels, "example.com/team": "green" })
    expect((await r.get(segment, id)).labels["example.com/team"]).toBe("green")
    expect((await svc.call("DELETE", `${base}/${key}`)).status).toBe(204)
    expectError(await svc.call("GET", `${base}/${key}`), 404, "not_found")
    expect(expectStatus(await svc.call("GET", base), 200)).toEqual(resource.labels)
    expect((await svc.call("PUT", `${base}/svc%2Fx`, { body: { value: "1" } })).status).toBe(400)
    expect((await svc.call("PUT", `${base}/big`, { body: { value: "v".repeat(64) } })).status).toBe(400)
  })

  it.each(Object.keys(tokens))("reads, sets and removes annotations of %s", async (segment) => {
    const base = `/api/v1/${segment}/${ids[segment]!}/annotations`
    expect(expectStatus(await svc.call("GET", base), 200)).toEqual({ note: "first" })
    const entry = { key: "example.com/doc", value: "free text, with spaces ✓" }
    const put = await svc.call("PUT", `${base}/example.com%2Fdoc`, { body: { value: entry.value } })
    expect(expectStatus(put, 200)).toEqual(entry)
    expect(expectStatus(await svc.call("GET", `${base}/example.com%2Fdoc`), 200)).toEqual(entry)
    expect(expectStatus(await svc.call("GET", base), 200)).toEqual({ note: "first", "example.com/doc": entry.value })
    expect((await svc.call("DELETE", `${base}/example.com%2Fdoc`)).status).toBe(204)
    expectError(await svc.call("GET", `${base}/example.com%2Fdoc`), 404, "not_found")
    expect((await svc.call("PUT", `${base}/svc%2Fx`, { body: { value: "1" } })).status).toBe(400)
  })
})
