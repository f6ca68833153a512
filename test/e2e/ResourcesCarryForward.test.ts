/**
 * Carry-forward of labels over real HTTP (issue 3; spec 2.3, 2.4): parents' user labels copied
 * as `svc/<parent_rt>/<key>` at create, `svc/` labels forwarded unchanged, the spec's root/acme
 * example literally, and background propagation of later parent changes to descendants.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConnectionBody,
  eventually,
  expectStatus,
  launch,
  rand,
  type Resource,
  resources,
  type Svc,
  userLabels
} from "../support/Api.ts"

let svc: Svc
let r: ReturnType<typeof resources>

beforeAll(async () => {
  svc = await launch("svc-e2e-carry-")
  r = resources(svc)
}, 90_000)

afterAll(async () => {
  await svc?.stop()
})

const putLabel = async (segment: string, id: string, key: string, value: string) =>
  expectStatus(await svc.call("PUT", `/api/v1/${segment}/${id}/labels/${key}`, { body: { value } }), 200)

const noDoublePrefix = (labels: Record<string, string>) =>
  expect(Object.keys(labels).filter((key) => /^svc\/[a-z]+\/svc\//.test(key))).toEqual([])

describe("carry-forward at create (spec 2.4)", () => {
  it("holds the spec example in a fresh subtree: namespace labels and the connector's reach the connection", async () => {
    const top = `root.cf${rand()}`
    await r.namespace(top)
    await putLabel("namespaces", top, "env", "prod")
    const acme = await r.namespace(`${top}.acme`, { labels: { team: "alpha" } })
    expect(acme.labels).toMatchObject({ team: "alpha", "svc/ns/env": "prod", "svc/ns/-/id": `${top}.acme` })
    const connector = await r.publishedConnector(top, { name: "github-app", labels: { vendor: "gh" } })
    expect(connector.labels).toMatchObject({
      vendor: "gh",
      "svc/ns/env": "prod",
      "svc/cxr/-/id": connector.id,
      "svc/cxr/-/name": "github-app",
      "svc/cxr/-/ns": top
    })
    const connection = await r.connection(connector.id, {
      namespace: `${top}.acme`,
      name: "main",
      labels: { tier: "gold" }
    })
    expect(connection.namespace).toBe(`${top}.acme`)
    expect(connection.labels).toMatchObject({
      tier: "gold",
      "svc/ns/team": "alpha",
      "svc/ns/env": "prod",
      "svc/ns/-/id": `${top}.acme`,
      "svc/cxr/vendor": "gh",
      "svc/cxr/-/id": connector.id,
      "svc/cxr/-/name": "github-app",
      "svc/cxr/-/ns": top,
      "svc/cxn/-/id": connection.id,
      "svc/cxn/-/name": "main",
      "svc/cxn/-/ns": `${top}.acme`
    })
    expect(userLabels(connection.labels)).toEqual({ tier: "gold" })
    noDoublePrefix(connection.labels)
    noDoublePrefix(connector.labels)
  })

  it("copies namespace labels as svc/ns/ onto actors, keys, rate limits and child namespaces", async () => {
    const ns = `root.cfk${rand()}`
    await r.namespace(ns, { labels: { team: "alpha" } })
    const actor = await r.create("actors", { externalId: `ext-${rand()}`, namespace: ns, labels: { role: "bot" } })
    const key = await r.create("keys", { namespace: ns })
    const rule = await r.create("rate-limits", {
      namespace: ns,
      definition: { algorithm: { token_bucket: { capacity: 5, refill_rate: 1 } } }
    })
    const child = await r.namespace(`${ns}.child`, { labels: { zone: "z1" } })
    for (const resource of [actor, key, rule, child]) {
      expect(resource.labels["svc/ns/team"], resource.id).toBe("alpha")
      noDoublePrefix(resource.labels)
    }
    expect(actor.labels).toMatchObject({ role: "bot", "svc/act/-/id": actor.id, "svc/act/-/ns": ns })
    expect(key.labels).toMatchObject({ "svc/key/-/id": key.id, "svc/key/-/name": key.name, "svc/key/-/ns": ns })
    expect(rule.labels).toMatchObject({ "svc/rl/-/id": rule.id, "svc/rl/-/name": rule.name, "svc/rl/-/ns": ns })
    const grandchild = await r.namespace(`${ns}.child.leaf`)
    expect(grandchild.labels).toMatchObject({
      "svc/ns/team": "alpha",
      "svc/ns/zone": "z1",
      "svc/ns/-/id": `${ns}.child.leaf`,
      "svc/ns/-/name": "leaf",
      "svc/ns/-/ns": `${ns}.child.leaf`
    })
  })

  it("projects the connector's identity and renames through PATCH /connectors/{id}", async () => {
    const ns = `root.cfr${rand()}`
    await r.namespace(ns)
    const connector = await r.publishedConnector(ns, { name: "old-name" })
    const renamed = expectStatus<Resource>(
      await svc.call("PATCH", `/api/v1/connectors/${connector.id}`, { body: { name: "new-name" } }),
      200
    )
    expect(renamed.id).toBe(connector.id)
    expect(renamed.labels["svc/cxr/-/name"]).toBe("new-name")
    const connection = await r.connection(connector.id)
    expect(connection.labels["svc/cxr/-/name"]).toBe("new-name")
    expect(connection.labels["svc/cxr/-/id"]).toBe(connector.id)
  })
})

describe("carry-forward after a parent change (spec 2.4 rules 3-4)", () => {
  it("rewrites descendants of descendants after a namespace label changes or goes", async () => {
    const top = `root.cfp${rand()}`
    await r.namespace(top, { labels: { env: "dev" } })
    await r.namespace(`${top}.a`)
    const leaf = (await r.namespace(`${top}.a.b`)).path
    const connector = await r.publishedConnector(top)
    const connection = await r.connection(connector.id, { namespace: leaf })
    const key = await r.create("keys", { namespace: leaf })
    expect(connection.labels["svc/ns/env"]).toBe("dev")
    await putLabel("namespaces", top, "env", "prod")
    const readAll = async () => [
      (await r.get("namespaces", leaf)).labels,
      (await r.get("keys", key.id)).labels,
      (await r.get("connections", connection.id)).labels,
      (await r.get("connectors", connector.id)).labels
    ]
    const updated = await eventually(readAll, (all) => all.every((labels) => labels["svc/ns/env"] === "prod"))
    expect(updated.map((labels) => labels["svc/ns/env"])).toEqual(["prod", "prod", "prod", "prod"])
    expect((await svc.call("DELETE", `/api/v1/namespaces/${top}/labels/env`)).status).toBe(204)
    const removed = await eventually(readAll, (all) => all.every((labels) => !("svc/ns/env" in labels)))
    expect(removed.map((labels) => labels["svc/ns/env"])).toEqual([undefined, undefined, undefined, undefined])
  })

  it("rewrites a connector's connections after its labels change or it is renamed", async () => {
    const ns = `root.cfc${rand()}`
    await r.namespace(ns)
    const connector = await r.publishedConnector(ns, { name: "before", labels: { vendor: "v1" } })
    const connection = await r.connection(connector.id)
    await putLabel("connectors", connector.id, "vendor", "v2")
    expectStatus(await svc.call("PATCH", `/api/v1/connectors/${connector.id}`, { body: { name: "after" } }), 200)
    const labels = await eventually(
      async () => (await r.get<ConnectionBody>("connections", connection.id)).labels,
      (l) => l["svc/cxr/vendor"] === "v2" && l["svc/cxr/-/name"] === "after"
    )
    expect(labels).toMatchObject({ "svc/cxr/vendor": "v2", "svc/cxr/-/name": "after", "svc/cxn/-/id": connection.id })
  })
})

describe("the spec's example with root itself (last: it changes root's labels)", () => {
  it("gives a connection in root.acme svc/ns/team=alpha and svc/ns/env=prod", async () => {
    expect(await putLabel("namespaces", "root", "env", "prod")).toEqual({ key: "env", value: "prod" })
    expect((await r.get("namespaces", "root")).labels).toMatchObject({
      env: "prod",
      "svc/ns/-/id": "root",
      "svc/ns/-/name": "root",
      "svc/ns/-/ns": "root"
    })
    await r.namespace("root.acme", { labels: { team: "alpha" } })
    const connector = await r.publishedConnector("root")
    const connection = await r.connection(connector.id, { namespace: "root.acme", labels: { app: "billing" } })
    expect(connection.labels).toMatchObject({
      "svc/ns/team": "alpha",
      "svc/ns/env": "prod",
      app: "billing",
      "svc/cxn/-/id": connection.id,
      "svc/cxn/-/name": connection.name,
      "svc/cxn/-/ns": "root.acme"
    })
    expect(userLabels(connection.labels)).toEqual({ app: "billing" })
    noDoublePrefix(connection.labels)
  })
})
