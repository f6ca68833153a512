/**
 * Lists, label selectors and search over real HTTP (issue 3; spec 2.6, 4.1, API-CONVENTIONS
 * "Lists"): every selector form, filters, ordering, cursor pagination over 250 connections and
 * the ranked admin-api search.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConnectionBody,
  type ConnectorBody,
  expectError,
  expectStatus,
  launch,
  mapLimit,
  rand,
  resources,
  type SearchHitBody,
  type Svc
} from "../support/Api.ts"

let svc: Svc
let r: ReturnType<typeof resources>

beforeAll(async () => {
  svc = await launch("svc-e2e-lists-")
  r = resources(svc)
}, 90_000)

afterAll(async () => {
  await svc?.stop()
})

const query = (params: Record<string, string>) => new URLSearchParams(params).toString()

describe("label selectors on connections (spec 2.6)", () => {
  let ns: string
  let connectorId: string

  beforeAll(async () => {
    ns = `root.sel${rand()}`
    await r.namespace(ns)
    await r.namespace(`${ns}.sub`)
    connectorId = (await r.publishedConnector(ns, { definition: { type: `t${rand()}`, auth: { type: "none" } } })).id
    const specs: Array<[string, Record<string, string>, string?]> = [
      ["c1", { env: "prod", tier: "gold" }],
      ["c2", { env: "dev", tier: "gold" }],
      ["c3", { env: "prod" }],
      ["c4", {}],
      ["c5", { env: "prod" }, `${ns}.sub`]
    ]
    for (const [name, labels, namespace] of specs) {
      await r.connection(connectorId, { name, labels, ...(namespace === undefined ? {} : { namespace }) })
    }
  }, 60_000)

  const select = async (selector: string, scoped = true) => {
    const params = { labelSelector: selector, ...(scoped ? { namespace: `${ns}.**` } : {}) }
    const page = await r.list<ConnectionBody>("connections", params)
    return page.items.map((item) => item.name).sort()
  }

  it.each([
    ["env=prod", ["c1", "c3", "c5"]],
    ["env==prod", ["c1", "c3", "c5"]],
    ["env!=prod", ["c2", "c4"]],
    ["tier", ["c1", "c2"]],
    ["!tier", ["c3", "c4", "c5"]],
    ["env=prod,tier=gold", ["c1"]],
    [" env = prod , !tier ", ["c3", "c5"]],
    ["env=prod,env!=prod", []],
    ["", ["c1", "c2", "c3", "c4", "c5"]]
  ])("selects %j", async (selector, expected) => {
    expect(await select(selector)).toEqual(expected)
  })

  it("selects by system labels without a namespace filter", async () => {
    expect(await select(`svc/ns/-/id=${ns}.sub`, false)).toEqual(["c5"])
    expect(await select(`svc/cxr/-/id=${connectorId}`, false)).toEqual(["c1", "c2", "c3", "c4", "c5"])
    expect(await select(`svc/cxn/-/name=c2,svc/cxn/-/ns=${ns}`, false)).toEqual(["c2"])
  })

  it("rejects a malformed selector naming the clause", async () => {
    for (const bad of ["a!b", "env=prod,a!b", "env in (prod)"]) {
      const reply = await svc.call("GET", `/api/v1/connections?${query({ labelSelector: bad })}`)
      const body = expectError(reply, 400, "invalid_request")
      expect(body.details?.[0]?.field).toBe("query.labelSelector")
      expect(body.details?.[0]?.message).toContain(bad === "env in (prod)" ? bad : "a!b")
    }
  })

  it("filters by namespace path or subtree, state and exact name", async () => {
    expect((await r.list<ConnectionBody>("connections", { namespace: ns })).items.map((i) => i.name).sort()).toEqual([
      "c1",
      "c2",
      "c3",
      "c4"
    ])
    expect((await r.list<ConnectionBody>("connections", { namespace: `${ns}.sub` })).items.map((i) => i.name)).toEqual([
      "c5"
    ])
    expect((await r.list("connections", { namespace: `${ns}.**`, state: "configured" })).items).toHaveLength(5)
    expect((await r.list("connections", { namespace: `${ns}.**`, state: "setup" })).items).toHaveLength(0)
    expect((await r.list("connections", { namespace: `${ns}.**`, name: "c2" })).items.map((i) => i.name)).toEqual([
      "c2"
    ])
    expect((await r.list("connections", { namespace: `${ns}.**`, name: "c" })).items).toHaveLength(0)
    expect((await r.list("connections", { connectorId })).items).toHaveLength(5)
    expectError(await svc.call("GET", "/api/v1/connections?state=bogus"), 400, "invalid_request")
    expectError(await svc.call("GET", "/api/v1/connections?namespace=Root.x"), 400, "invalid_request")
  })

  it("orders by name, createdAt and id in both directions", async () => {
    const names = async (order: string) =>
      (await r.list<ConnectionBody>("connections", { namespace: `${ns}.**`, order })).items.map((i) => i.name)
    expect(await names("name ASC")).toEqual(["c1", "c2", "c3", "c4", "c5"])
    expect(await names("name DESC")).toEqual(["c5", "c4", "c3", "c2", "c1"])
    expect(await names("createdAt ASC")).toEqual(["c1", "c2", "c3", "c4", "c5"])
    expect(await names("createdAt DESC")).toEqual(["c5", "c4", "c3", "c2", "c1"])
    const ids = (await r.list<ConnectionBody>("connections", { namespace: `${ns}.**`, order: "id DESC" })).items.map(
      (i) => i.id
    )
    expect(ids).toHaveLength(5)
    expect(ids).toEqual([...ids].sort().reverse())
    expectError(await svc.call("GET", "/api/v1/connections?order=labels%20ASC"), 400, "invalid_request")
    expectError(await svc.call("GET", "/api/v1/connections?order=name%20SIDEWAYS"), 400, "invalid_request")
  })
})

describe("labelSelector on every other list", () => {
  it.each(["namespaces", "actors", "connectors", "keys"])("filters %s", async (segment) => {
    const tag = `x${rand()}`
    const ns = `root.ls${rand()}`
    await r.namespace(ns, segment === "namespaces" ? { labels: { mark: tag } } : {})
    const base = { namespace: ns }
    const marked =
      segment === "namespaces"
        ? ns
        : (
            await r.create(segment, {
              ...base,
              labels: { mark: tag },
              ...(segment === "actors" ? { externalId: `ext-${rand()}` } : {}),
              ...(segment === "connectors" ? { definition: { type: "demo", auth: { type: "none" } } } : {})
            })
          ).id
    const page = await r.list(segment, { labelSelector: `mark=${tag}` })
    expect(page.items.map((item) => item.id)).toEqual([marked])
    const bad = expectError(await svc.call("GET", `/api/v1/${segment}?labelSelector=a!b`), 400, "invalid_request")
    expect(bad.details?.[0]?.field).toBe("query.labelSelector")
  })
})

describe("connector list filters (spec 4.1)", () => {
  it("filters by state and type of the current version", async () => {
    const ns = `root.cxf${rand()}`
    await r.namespace(ns)
    const alpha = `alpha${rand()}`
    const beta = `beta${rand()}`
    const draft = await r.connector(ns, { name: "a-draft", definition: { type: alpha, auth: { type: "none" } } })
    const primaryBeta = await r.publishedConnector(ns, {
      name: "b-primary",
      definition: { type: beta, auth: { type: "none" } }
    })
    const primaryAlpha = await r.publishedConnector(ns, {
      name: "c-primary",
      definition: { type: alpha, auth: { type: "none" } }
    })
    const ids = async (params: Record<string, string>) =>
      (await r.list<ConnectorBody>("connectors", { namespace: ns, order: "name ASC", ...params })).items.map(
        (i) => i.id
      )
    expect(await ids({})).toEqual([draft.id, primaryBeta.id, primaryAlpha.id])
    expect(await ids({ type: alpha })).toEqual([draft.id, primaryAlpha.id])
    expect(await ids({ state: "primary" })).toEqual([primaryBeta.id, primaryAlpha.id])
    expect(await ids({ state: "draft" })).toEqual([draft.id])
    expect(await ids({ state: "primary", type: alpha })).toEqual([primaryAlpha.id])
    expect(await ids({ name: "b-primary" })).toEqual([primaryBeta.id])
    expect(await ids({ state: "archived" })).toEqual([])
    expectError(await svc.call("GET", "/api/v1/connectors?state=live"), 400, "invalid_request")
  })
})

describe("cursor pagination over 250 connections (API-CONVENTIONS Lists)", () => {
  let ns: string
  let expected: Array<ConnectionBody>

  beforeAll(async () => {
    ns = `root.page${rand()}`
    await r.namespace(ns)
    const connector = await r.publishedConnector(ns)
    const order = Array.from({ length: 250 }, (_, i) => i).sort((a, b) => ((a * 7919) % 250) - ((b * 7919) % 250))
    expected = await mapLimit(order, 8, (i) => r.connection(connector.id, { name: `n${String(i).padStart(3, "0")}` }))
  }, 120_000)

  const pages = async (params: Record<string, string>) => {
    const sizes: Array<number> = []
    const items: Array<ConnectionBody> = []
    let page = await r.list<ConnectionBody>("connections", { namespace: `${ns}.**`, limit: "40", ...params })
    for (;;) {
      sizes.push(page.items.length)
      items.push(...page.items)
      if (page.cursor === undefined || sizes.length > 20) break
      page = await r.list<ConnectionBody>("connections", { limit: "40", cursor: page.cursor })
    }
    expect(sizes).toEqual([40, 40, 40, 40, 40, 40, 10])
    expect(new Set(items.map((i) => i.id)).size).toBe(250)
    expect(new Set(items.map((i) => i.id))).toEqual(new Set(expected.map((i) => i.id)))
    return items
  }

  it("walks name ASC and name DESC with no duplicates or gaps", async () => {
    const sorted = expected.map((i) => i.name).sort()
    expect((await pages({ order: "name ASC" })).map((i) => i.name)).toEqual(sorted)
    expect((await pages({ order: "name DESC" })).map((i) => i.name)).toEqual([...sorted].reverse())
  })

  it("walks createdAt DESC in non-increasing creation time", async () => {
    const times = (await pages({ order: "createdAt DESC" })).map((i) => Date.parse(i.createdAt))
    expect(times.every((t, i) => i === 0 || t <= times[i - 1]!)).toBe(true)
  })

  it("bounds the page size and refuses a cursor it did not issue", async () => {
    for (const limit of ["0", "1001", "-1", "ten"]) {
      expectError(await svc.call("GET", `/api/v1/connections?limit=${limit}`), 400, "invalid_request")
    }
    const big = await r.list("connections", { namespace: `${ns}.**`, limit: "1000" })
    expect(big.items).toHaveLength(250)
    expect(big.cursor).toBeUndefined()
    expect((await r.list("connections", { namespace: `${ns}.**` })).items).toHaveLength(100)
    for (const cursor of ["garbage", "eyJhIjoxfQ", "!!!"]) {
      expectError(await svc.call("GET", `/api/v1/connections?${query({ cursor })}`), 400, "invalid_cursor")
    }
  })
})

describe("search on the admin API (spec 4.1)", () => {
  it("ranks exact name, then prefix, then substring and label matches", async () => {
    const ns = `root.srch${rand()}`
    await r.namespace(ns)
    const connector = await r.publishedConnector(ns, { name: "unrelated" })
    for (const name of ["prepay", "payments", "pay", "other"]) await r.connection(connector.id, { name })
    await r.connection(connector.id, { name: "zzz", labels: { team: "pay" } })
    await r.create("keys", { namespace: ns, name: "pay" })
    const search = async (params: Record<string, string>) =>
      expectStatus<{ items: Array<SearchHitBody> }>(
        await svc.call("GET", `/api/v1/search/resources?${query(params)}`, { service: "admin-api" }),
        200
      ).items.filter((hit) => hit.namespace === ns)
    const hits = await search({ q: "pay", resourceType: "connections" })
    expect(hits.map((h) => [h.name, h.match]).slice(0, 2)).toEqual([
      ["pay", "exact"],
      ["payments", "prefix"]
    ])
    expect(
      hits
        .slice(2)
        .map((h) => `${h.name}:${h.match}`)
        .sort()
    ).toEqual(["prepay:substring", "zzz:label"])
    expect(hits.every((h) => h.resourceType === "connections")).toBe(true)
    expect(hits.find((h) => h.name === "zzz")?.labels).toMatchObject({ team: "pay" })
    const all = await search({ q: "pay" })
    expect(all.filter((h) => h.resourceType === "keys").map((h) => [h.name, h.match])).toEqual([["pay", "exact"]])
    expect(all.some((h) => h.name === "other" || h.name === "unrelated")).toBe(false)
    expectError(await svc.call("GET", "/api/v1/search/resources?q=", { service: "admin-api" }), 400, "invalid_request")
    expect((await svc.call("GET", "/api/v1/search/resources?q=pay")).status).toBe(404)
  })
})
