import { assert, layer } from "@effect/vitest"
import { ConnectorId } from "@svc/domain/Ids"
import { type LabelParent, type Labels, materializeLabels, type ResourceToken, userLabelsOf } from "@svc/domain/Labels"
import { namespaceFilterMatches, parentNamespace } from "@svc/domain/Resource"
import { Array as Arr, Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { ConnectorRepo } from "./ConnectorRepo.ts"
import { LabelReconciler } from "./LabelReconciler.ts"
import * as Migrations from "./Migrations.ts"
import { jsonb, ResourceRepo } from "./ResourceRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { fixtureId } from "./TestRows.ts"

const cxr = (tag: string) => fixtureId("cxr", tag)

const now = new Date(Date.UTC(2025, 0, 1, 0, 0, 0, 321))
const stale = (user: Labels): Labels => ({ ...user, "svc/ns/old": "stale", "svc/ns/-/id": "nowhere" })
const lastSegment = (path: string) => path.slice(path.lastIndexOf(".") + 1)

const tables = [
  ["actors", "act"],
  ["keys", "key"],
  ["rate_limits", "rl"],
  ["connectors", "cxr"],
  ["connections", "cxn"]
] as const
type Table = (typeof tables)[number][0]
interface StoredRow {
  readonly table: Table
  readonly rt: ResourceToken
  readonly id: string
  readonly name: string
  readonly namespace: string
  readonly labels: Labels
  readonly type?: string
  readonly connectorId?: string
}
interface Snapshot {
  readonly namespaces: ReadonlyMap<string, Labels>
  readonly rows: ReadonlyArray<StoredRow>
}

/** What every live row should carry, computed from stored user labels only (independent of the reconciler). */
const oracle = (snapshot: Snapshot) => {
  const namespaces = new Map<string, Labels | undefined>()
  const ns = (path: string): Labels | undefined => {
    if (namespaces.has(path)) return namespaces.get(path)
    const stored = snapshot.namespaces.get(path)
    const parentPath = parentNamespace(path)
    const parent = parentPath === undefined ? undefined : ns(parentPath)
    const value =
      stored === undefined || (parentPath !== undefined && parent === undefined)
        ? undefined
        : materializeLabels({
            rt: "ns",
            id: path,
            name: lastSegment(path),
            namespace: path,
            userLabels: userLabelsOf(stored),
            parents: parent === undefined ? [] : [{ rt: "ns", labels: parent }]
          })
    namespaces.set(path, value)
    return value
  }
  const connectors = new Map(snapshot.rows.filter((r) => r.table === "connectors").map((r) => [r.id, r]))
  const row = (r: StoredRow): Labels | undefined => {
    const nsLabels = ns(r.namespace)
    if (nsLabels === undefined) return undefined
    const parents: Array<LabelParent> = [{ rt: "ns", labels: nsLabels }]
    if (r.table === "connections") {
      const connector = connectors.get(r.connectorId ?? "")
      const connectorLabels = connector === undefined ? undefined : row(connector)
      if (connectorLabels === undefined) return undefined
      parents.unshift({ rt: "cxr", labels: connectorLabels })
    }
    const system = r.table === "connectors" ? { "svc/cxr/type": r.type ?? "" } : {}
    const identity = { id: r.id, name: r.name, namespace: r.namespace }
    return materializeLabels({ rt: r.rt, ...identity, userLabels: userLabelsOf(r.labels), parents, system })
  }
  return { ns, row }
}

/** A client whose first UPDATE of `table` first runs `before` (a concurrent write between read and CAS). */
const interceptUpdate = (
  sql: SqlClient.SqlClient,
  table: string,
  before: Effect.Effect<unknown, SqlError>
): SqlClient.SqlClient => {
  let fired = false
  return new Proxy(sql, {
    apply(target, self, args: Array<unknown>) {
      const statement = Reflect.apply(target, self, args) as Statement.Statement<unknown>
      if (fired || !(Array.isArray(args[0]) && "raw" in args[0])) return statement
      if (!new RegExp(`^\\s*UPDATE "${table}" AS t`).test(statement.compile()[0])) return statement
      fired = true
      return Effect.andThen(before, statement)
    }
  })
}

for (const [backend, db] of TestDatabase.backends) {
  const Test = Layer.mergeAll(ResourceRepo.layer, ConnectorRepo.layer, LabelReconciler.layer).pipe(
    Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db))
  )

  layer(Test, { timeout: "60 seconds" })(`LabelReconciler (${backend})`, (it) => {
    const envelope = (namespace: string, name: string, labels: Labels) => ({
      namespace,
      name,
      labels: jsonb(labels),
      annotations: jsonb({}),
      createdAt: now,
      updatedAt: now
    })
    const insert = Effect.fnUntraced(function* (
      table: Table | "namespaces",
      id: string,
      namespace: string,
      labels: Labels
    ) {
      const repo = yield* ResourceRepo
      const extra: Record<string, Record<string, unknown>> = {
        namespaces: { path: id },
        actors: { externalId: `ext-${id}`, permissions: jsonb([]), source: "api" },
        rate_limits: { definition: jsonb({}), mode: "enforce" },
        connectors: { state: "draft", version: 1, type: "http" }
      }
      const name = table === "namespaces" ? lastSegment(id) : `${id}-name`
      const idColumn = table === "namespaces" ? {} : { id }
      yield* repo.insert(table, { ...idColumn, ...envelope(namespace, name, labels), ...extra[table] })
      if (table === "connectors")
        yield* (yield* ConnectorRepo).insertVersion(ConnectorId.make(id), { type: "http" }, now)
    })
    const namespace = (path: string, labels: Labels) => insert("namespaces", path, path, labels)
    const connection = Effect.fnUntraced(function* (id: string, ns: string, connectorId: string, labels: Labels) {
      const repo = yield* ResourceRepo
      yield* repo.insert("connections", {
        id,
        ...envelope(ns, `${id}-name`, labels),
        connectorId,
        connectorVersion: 1,
        state: "configured",
        healthState: "healthy",
        setupStepId: null,
        configurationEnc: null
      })
    })
    const setLabels = Effect.fnUntraced(function* (table: Table | "namespaces", id: string, labels: Labels) {
      const sql = yield* SqlClient.SqlClient
      const column = table === "namespaces" ? "path" : "id"
      yield* sql`UPDATE ${sql(table)} SET labels = ${jsonb(labels)} WHERE ${sql(column)} = ${id} AND deleted_at IS NULL`
    })
    const labelsOf = Effect.fnUntraced(function* (table: Table | "namespaces", id: string) {
      const sql = yield* SqlClient.SqlClient
      const column = table === "namespaces" ? "path" : "id"
      const rows = yield* sql<{ labels: Labels }>`SELECT labels FROM ${sql(table)} WHERE ${sql(column)} = ${id}`
      assert.strictEqual(rows.length, 1, `${table} ${id}`)
      return rows[0]!.labels
    })
    const snapshot = Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const nsRows = yield* sql<{ path: string; labels: Labels }>`
        SELECT path, labels FROM namespaces WHERE deleted_at IS NULL`
      const rows: Array<StoredRow> = []
      for (const [table, rt] of tables) {
        const found = yield* sql<Omit<StoredRow, "table" | "rt">>`
          SELECT * FROM ${sql(table)} WHERE deleted_at IS NULL ORDER BY id`
        for (const r of found) rows.push({ ...r, table, rt })
      }
      return { namespaces: new Map(nsRows.map((r) => [r.path, r.labels])), rows } satisfies Snapshot
    })
    /** Asserts every live row under `path` (all when undefined) holds its oracle labels; returns how many were checked. */
    const assertMaterialized = Effect.fnUntraced(function* (path: string | undefined) {
      const snap = yield* snapshot
      const expected = oracle(snap)
      const inside = (ns: string) => path === undefined || namespaceFilterMatches({ path, subtree: true }, ns)
      let checked = 0
      for (const [nsPath, labels] of snap.namespaces) {
        if (!inside(nsPath)) continue
        assert.deepStrictEqual(labels, expected.ns(nsPath), `namespace ${nsPath}`)
        checked++
      }
      for (const row of snap.rows) {
        if (!inside(row.namespace)) continue
        assert.deepStrictEqual(row.labels, expected.row(row), `${row.table} ${row.id}`)
        checked++
      }
      return checked
    })
    const driftCount = Effect.map(snapshot, (snap) => {
      const expected = oracle(snap)
      let drifted = 0
      for (const [nsPath, labels] of snap.namespaces) if (!sameJson(labels, expected.ns(nsPath))) drifted++
      for (const row of snap.rows) if (!sameJson(row.labels, expected.row(row))) drifted++
      return drifted
    })

    it.effect("namespaceSubtree rewrites every stale row below the path, descendants of descendants included", () =>
      Effect.gen(function* () {
        const reconciler = yield* LabelReconciler
        yield* namespace("root.a", stale({ team: "alpha" }))
        yield* namespace("root.a.b", stale({ tier: "gold" }))
        yield* namespace("root.ab", stale({ team: "sibling" }))
        yield* insert("actors", "act_t1", "root.a.b", stale({ role: "dev" }))
        yield* insert("keys", "key_t1", "root.a.b", stale({}))
        yield* insert("keys", "key_t2", "root.ab", stale({}))
        yield* insert("keys", "key_t3", "root.a.b", stale({ gone: "yes" }))
        yield* (yield* ResourceRepo).softDelete("keys", "key_t3", now)
        yield* insert("rate_limits", "rl_t1", "root.a", stale({}))
        yield* insert("connectors", cxr("t1"), "root.a", stale({ vendor: "acme" }))
        yield* connection("cxn_t1", "root.a.b", cxr("t1"), stale({ purpose: "crm" }))

        assert.deepStrictEqual(yield* reconciler.namespaceSubtree("root.a"), { updated: 7 })
        assert.strictEqual(yield* assertMaterialized("root.a"), 7)
        assert.deepStrictEqual(yield* labelsOf("keys", "key_t1"), {
          "svc/key/-/id": "key_t1",
          "svc/key/-/name": "key_t1-name",
          "svc/key/-/ns": "root.a.b",
          "svc/ns/-/id": "root.a.b",
          "svc/ns/-/name": "b",
          "svc/ns/-/ns": "root.a.b",
          "svc/ns/team": "alpha",
          "svc/ns/tier": "gold"
        })
        assert.deepStrictEqual(yield* labelsOf("connections", "cxn_t1"), {
          "svc/cxn/-/id": "cxn_t1",
          "svc/cxn/-/name": "cxn_t1-name",
          "svc/cxn/-/ns": "root.a.b",
          "svc/cxr/-/id": cxr("t1"),
          "svc/cxr/-/name": `${cxr("t1")}-name`,
          "svc/cxr/-/ns": "root.a",
          "svc/cxr/type": "http",
          "svc/cxr/vendor": "acme",
          "svc/ns/-/id": "root.a.b",
          "svc/ns/-/name": "b",
          "svc/ns/-/ns": "root.a.b",
          "svc/ns/team": "alpha",
          "svc/ns/tier": "gold",
          purpose: "crm"
        })
        assert.deepStrictEqual(yield* labelsOf("keys", "key_t2"), stale({}))
        assert.deepStrictEqual(yield* labelsOf("namespaces", "root.ab"), stale({ team: "sibling" }))
        assert.deepStrictEqual(yield* labelsOf("keys", "key_t3"), stale({ gone: "yes" }))
        assert.deepStrictEqual(yield* reconciler.namespaceSubtree("root.a"), { updated: 0 })
      })
    )

    it.effect("connector(id) rewrites that connector's live connections only", () =>
      Effect.gen(function* () {
        const reconciler = yield* LabelReconciler
        yield* namespace("root.c", {})
        yield* namespace("root.c.d", { zone: "eu" })
        yield* insert("connectors", cxr("c1"), "root.c", { vendor: "acme" })
        yield* insert("connectors", cxr("c2"), "root.c", { vendor: "other" })
        yield* connection("cxn_c1", "root.c", cxr("c1"), {})
        yield* connection("cxn_c2", "root.c.d", cxr("c1"), { purpose: "crm" })
        yield* connection("cxn_c3", "root.c", cxr("c1"), {})
        yield* connection("cxn_c4", "root.c", cxr("c2"), {})
        yield* insert("keys", "key_c1", "root.c", {})
        assert.deepStrictEqual(yield* reconciler.namespaceSubtree("root.c"), { updated: 9 })
        yield* (yield* ResourceRepo).softDelete("connections", "cxn_c3", now)
        const deleted = yield* labelsOf("connections", "cxn_c3")

        const relabeled = { ...(yield* labelsOf("connectors", cxr("c1"))), vendor: "globex" }
        yield* setLabels("connectors", cxr("c1"), relabeled)
        yield* setLabels("connections", "cxn_c4", stale({}))
        yield* setLabels("keys", "key_c1", stale({}))
        assert.deepStrictEqual(yield* reconciler.connector(cxr("c1")), { updated: 2 })
        assert.strictEqual((yield* labelsOf("connections", "cxn_c2"))["svc/cxr/vendor"], "globex")
        assert.strictEqual((yield* labelsOf("connections", "cxn_c2"))["svc/ns/-/id"], "root.c.d")
        const snap = yield* snapshot
        const expected = oracle(snap)
        for (const row of snap.rows.filter((r) => r.id === "cxn_c1" || r.id === "cxn_c2")) {
          assert.deepStrictEqual(row.labels, expected.row(row), row.id)
        }
        assert.deepStrictEqual(yield* labelsOf("connectors", cxr("c1")), relabeled)
        assert.deepStrictEqual(yield* labelsOf("connections", "cxn_c4"), stale({}))
        assert.deepStrictEqual(yield* labelsOf("keys", "key_c1"), stale({}))
        assert.deepStrictEqual(yield* labelsOf("connections", "cxn_c3"), deleted)
        assert.deepStrictEqual(yield* reconciler.connector(cxr("c1")), { updated: 0 })
        assert.deepStrictEqual(yield* reconciler.connector(cxr("missing")), { updated: 0 })
      })
    )

    it.effect("writes are compare-and-swap: a row changed or deleted between read and write is left alone", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* namespace("root.k", stale({ team: "kappa" }))
        yield* insert("keys", "key_k1", "root.k", stale({}))
        yield* insert("keys", "key_k2", "root.k", stale({}))
        yield* insert("keys", "key_k3", "root.k", stale({}))
        const repo = yield* ResourceRepo
        const userWrite = materializeLabels({
          rt: "key",
          id: "key_k1",
          name: "key_k1-name",
          namespace: "root.k",
          userLabels: { fresh: "yes" },
          parents: [
            {
              rt: "ns",
              labels: { "svc/ns/-/id": "root.k", "svc/ns/-/name": "k", "svc/ns/-/ns": "root.k", team: "kappa" }
            }
          ]
        })
        const concurrent = interceptUpdate(
          sql,
          "keys",
          Effect.andThen(setLabels("keys", "key_k1", userWrite), repo.softDelete("keys", "key_k3", now)).pipe(
            Effect.provideService(SqlClient.SqlClient, sql)
          )
        )
        const result = yield* Effect.gen(function* () {
          return yield* (yield* LabelReconciler).namespaceSubtree("root.k")
        }).pipe(
          Effect.provide(
            Layer.fresh(LabelReconciler.layer).pipe(Layer.provide(Layer.succeed(SqlClient.SqlClient)(concurrent)))
          )
        )
        assert.deepStrictEqual(result, { updated: 2 })
        assert.deepStrictEqual(yield* labelsOf("keys", "key_k1"), userWrite)
        assert.deepStrictEqual(yield* labelsOf("keys", "key_k3"), stale({}))
        assert.strictEqual(yield* assertMaterialized("root.k"), 3)
        assert.deepStrictEqual(yield* (yield* LabelReconciler).namespaceSubtree("root.k"), { updated: 0 })
      })
    )

    it.effect("rewrites more rows than one write batch", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* namespace("root.bulk", { size: "big" })
        const rows = Arr.makeBy(1203, (i) => ({
          id: `key_bulk${String(i).padStart(4, "0")}`,
          ...envelope("root.bulk", `bulk-${i}`, stale({ n: String(i) }))
        }))
        yield* sql`INSERT INTO keys ${sql.insert(rows)}`
        assert.deepStrictEqual(yield* (yield* LabelReconciler).namespaceSubtree("root.bulk"), { updated: 1204 })
        assert.strictEqual(yield* assertMaterialized("root.bulk"), 1204)
      })
    )

    it.effect("all fixes drift anywhere, skips soft-deleted rows and is idempotent", () =>
      Effect.gen(function* () {
        const reconciler = yield* LabelReconciler
        yield* setLabels("namespaces", "root", { ...(yield* labelsOf("namespaces", "root")), env: "prod" })
        yield* setLabels("keys", "key_t1", { junk: "x" })
        yield* setLabels("connectors", cxr("c2"), stale({ vendor: "changed" }))
        const deleted = yield* labelsOf("keys", "key_t3")
        const drifted = yield* driftCount
        assert.isAbove(drifted, 1200)
        assert.deepStrictEqual(yield* reconciler.all(), { updated: drifted })
        const snap = yield* snapshot
        assert.strictEqual(yield* assertMaterialized(undefined), snap.namespaces.size + snap.rows.length)
        assert.strictEqual((yield* labelsOf("connections", "cxn_t1"))["svc/ns/env"], "prod")
        assert.strictEqual((yield* labelsOf("connections", "cxn_c4"))["svc/cxr/vendor"], "changed")
        assert.deepStrictEqual(yield* labelsOf("keys", "key_t3"), deleted)
        assert.deepStrictEqual(yield* reconciler.all(), { updated: 0 })
      })
    )
  })
}

const sameJson = (left: Labels, right: Labels | undefined): boolean =>
  right !== undefined &&
  Object.keys(left).length === Object.keys(right).length &&
  Object.entries(left).every(([key, value]) => right[key] === value)
