import { assert, layer } from "@effect/vitest"
import { type AccessClause, type AccessFilter, accessAllows } from "@svc/domain/AccessFilter"
import { parseSelector } from "@svc/domain/Selector"
import { DateTime, Effect, Layer, Option, Result } from "effect"
import { SqlClient } from "effect/sql"
import * as fc from "fast-check"
import * as Migrations from "./Migrations.ts"
import { jsonb, type ListSpec, ResourceRepo, type TableName } from "./ResourceRepo.ts"
import { ActorResourceRow, KeyRow, NamespaceRow, RateLimitRow } from "./Rows.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { fixtures } from "./TestRows.ts"
const { at, envelope } = fixtures(123)

const pad = (n: number): string => String(n).padStart(3, "0")

const keyRow = (id: string, namespace: string, name: string, createdAt?: Date, labels?: Record<string, string>) => ({
  id,
  ...envelope(namespace, name, createdAt, labels)
})
const actorRow = (id: string, namespace: string, name: string) => ({
  id,
  ...envelope(namespace, name),
  externalId: `ext-${id}`,
  permissions: jsonb([]),
  source: "api"
})
const rateLimitRow = (id: string, namespace: string, name: string, mode: "enforce" | "observe") => ({
  id,
  ...envelope(namespace, name),
  definition: jsonb({ limit: 1 }),
  mode
})
const namespaceRow = (path: string) => ({ path, ...envelope(path, path.slice(path.lastIndexOf(".") + 1)) })

const allAccess: AccessFilter = { grants: [{ namespace: { _tag: "Any" }, ids: undefined }], restrictions: undefined }
const baseSpec = (table: TableName, overrides: Partial<ListSpec> = {}): ListSpec => ({
  table,
  access: allAccess,
  namespace: undefined,
  name: undefined,
  selector: undefined,
  equals: {},
  sort: { column: "id", type: "text" },
  direction: "ASC",
  after: undefined,
  limit: 1000,
  ...overrides
})
const subtree = (path: string) => ({ path, subtree: true })
const exact = (path: string) => ({ path, subtree: false })

for (const [backend, db] of TestDatabase.backends) {
  const Test = ResourceRepo.layer.pipe(Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db)))

  layer(Test, { timeout: "60 seconds" })(`ResourceRepo (${backend})`, (it) => {
    const listIds = (spec: ListSpec) =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        return (yield* repo.list(spec, KeyRow)).rows.map((row) => row.id)
      })

    it.effect("insert then findLive decodes the row; unknown ids are none", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        yield* repo.insert("keys", keyRow("key_find", "root.find", "k1", at(5), { env: "prod" }))
        const found = yield* repo.findLive("keys", "key_find", KeyRow)
        assert.isTrue(Option.isSome(found))
        const row = Option.getOrThrow(found)
        assert.deepStrictEqual(
          [row.id, row.namespace, row.name, row.labels, row.annotations],
          ["key_find", "root.find", "k1", { env: "prod" }, {}]
        )
        assert.strictEqual(DateTime.toEpochMillis(row.createdAt), at(5).getTime())
        assert.strictEqual(DateTime.toEpochMillis(row.updatedAt), at(5).getTime())
        assert.isTrue(Option.isNone(yield* repo.findLive("keys", "key_nope", KeyRow)))
        yield* repo.insert("namespaces", namespaceRow("root.find"))
        const ns = Option.getOrThrow(yield* repo.findLive("namespaces", "root.find", NamespaceRow))
        assert.deepStrictEqual([ns.path, ns.namespace, ns.name], ["root.find", "root.find", "find"])
      })
    )

    it.effect("a live duplicate name in one namespace is NameTaken; other namespaces and tables are free", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        yield* repo.insert("keys", keyRow("key_dup1", "root.dup", "same"))
        const error = yield* Effect.flip(repo.insert("keys", keyRow("key_dup2", "root.dup", "same")))
        assert.strictEqual(error._tag, "NameTaken")
        const sqlErrors = yield* Effect.exit(
          repo
            .insert("keys", keyRow("key_dup3", "root.dup", "same"))
            .pipe(Effect.catchTag("NameTaken", () => Effect.void))
        )
        assert.strictEqual(sqlErrors._tag, "Success")
        yield* repo.insert("keys", keyRow("key_dup4", "root.dup.other", "same"))
        yield* repo.insert("actors", actorRow("act_dup1", "root.dup", "same"))
        yield* repo.insert("rate_limits", rateLimitRow("rl_dup1", "root.dup", "same", "enforce"))
        assert.strictEqual(
          (yield* Effect.flip(repo.insert("actors", actorRow("act_dup2", "root.dup", "same"))))._tag,
          "NameTaken"
        )
        yield* repo.insert("namespaces", namespaceRow("root.dup"))
        assert.strictEqual((yield* Effect.flip(repo.insert("namespaces", namespaceRow("root.dup"))))._tag, "NameTaken")
        assert.deepStrictEqual(yield* listIds(baseSpec("keys", { name: "same" })), ["key_dup1", "key_dup4"])
      })
    )

    it.effect("softDelete hides the row, releases the name and happens once", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        yield* repo.insert("keys", keyRow("key_del1", "root.del", "gone"))
        assert.isTrue(yield* repo.softDelete("keys", "key_del1", at(10)))
        assert.isFalse(yield* repo.softDelete("keys", "key_del1", at(11)))
        assert.isFalse(yield* repo.softDelete("keys", "key_missing", at(11)))
        assert.isTrue(Option.isNone(yield* repo.findLive("keys", "key_del1", KeyRow)))
        assert.deepStrictEqual(yield* listIds(baseSpec("keys", { namespace: exact("root.del") })), [])
        assert.isFalse(yield* repo.update("keys", "key_del1", { name: "back" }))
        yield* repo.insert("keys", keyRow("key_del2", "root.del", "gone"))
        assert.deepStrictEqual(yield* listIds(baseSpec("keys", { namespace: exact("root.del") })), ["key_del2"])
        yield* repo.insert("namespaces", namespaceRow("root.del"))
        assert.isTrue(yield* repo.softDelete("namespaces", "root.del", at(12)))
        yield* repo.insert("namespaces", namespaceRow("root.del"))
        assert.isTrue(Option.isSome(yield* repo.findLive("namespaces", "root.del", NamespaceRow)))
      })
    )

    it.effect("update renames a live row and reports NameTaken on a collision", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        yield* repo.insert("keys", keyRow("key_up1", "root.up", "first"))
        yield* repo.insert("keys", keyRow("key_up2", "root.up", "second"))
        assert.isTrue(yield* repo.update("keys", "key_up1", { name: "renamed", updatedAt: at(20) }))
        const row = Option.getOrThrow(yield* repo.findLive("keys", "key_up1", KeyRow))
        assert.deepStrictEqual([row.name, DateTime.toEpochMillis(row.updatedAt)], ["renamed", at(20).getTime()])
        const error = yield* Effect.flip(repo.update("keys", "key_up2", { name: "renamed" }))
        assert.strictEqual(error._tag, "NameTaken")
        assert.strictEqual(Option.getOrThrow(yield* repo.findLive("keys", "key_up2", KeyRow)).name, "second")
        assert.isTrue(yield* repo.update("keys", "key_up2", { name: "first" }))
        assert.isFalse(yield* repo.update("keys", "key_none", { name: "x" }))
      })
    )

    it.effect("keyset pages have no gaps or repeats; ties are broken by id", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const rows = Array.from({ length: 120 }, (_, i) => ({
          id: `key_pg${pad((i * 7) % 120)}`,
          namespace: i % 2 === 0 ? "root.pg.x" : "root.pg.y",
          name: `n${pad(Math.floor(i / 2))}`,
          createdAt: at(Math.floor(i / 6))
        }))
        for (const row of rows) yield* repo.insert("keys", keyRow(row.id, row.namespace, row.name, row.createdAt))
        const byCreated = (a: (typeof rows)[number], b: (typeof rows)[number]) =>
          a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1)
        const byName = (a: (typeof rows)[number], b: (typeof rows)[number]) =>
          a.name === b.name ? (a.id < b.id ? -1 : 1) : a.name < b.name ? -1 : 1
        const cases = [
          ["created_at", "timestamptz", "ASC", [...rows].sort(byCreated)],
          ["created_at", "timestamptz", "DESC", [...rows].sort(byCreated).reverse()],
          ["name", "text", "DESC", [...rows].sort(byName).reverse()]
        ] as const
        for (const [column, type, direction, expected] of cases) {
          for (const limit of [25, 24]) {
            const pages: Array<Array<string>> = []
            let after: ListSpec["after"]
            for (let guard = 0; guard < 10; guard++) {
              const spec = baseSpec("keys", {
                namespace: subtree("root.pg"),
                sort: { column, type },
                direction,
                after,
                limit
              })
              const page = yield* repo.list(spec, KeyRow)
              pages.push(page.rows.map((row) => row.id))
              const last = page.rows.at(-1)
              if (!page.more || last === undefined) break
              const value =
                column === "name" ? last.name : new Date(DateTime.toEpochMillis(last.createdAt)).toISOString()
              after = { value, id: last.id }
            }
            const label = `${column} ${direction} limit ${limit}`
            assert.deepStrictEqual(
              pages.map((page) => page.length),
              limit === 25 ? [25, 25, 25, 25, 20] : [24, 24, 24, 24, 24],
              label
            )
            assert.deepStrictEqual(
              pages.flat(),
              expected.map((row) => row.id),
              label
            )
          }
        }
      })
    )

    it.effect("namespace filters: exact, subtree without siblings, `_` is not a wildcard", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const spaces = [
          "root.nf",
          "root.nf.a",
          "root.nf.a.b",
          "root.nf.ab",
          "root.nf.a_b",
          "root.nf.axb",
          "root.nf.axb.c"
        ]
        for (const [i, ns] of spaces.entries()) yield* repo.insert("keys", keyRow(`key_nf${i}`, ns, "k"))
        const cases: ReadonlyArray<readonly [ListSpec["namespace"], ReadonlyArray<string>]> = [
          [exact("root.nf.a"), ["key_nf1"]],
          [subtree("root.nf.a"), ["key_nf1", "key_nf2"]],
          [exact("root.nf.a_b"), ["key_nf4"]],
          [subtree("root.nf.a_b"), ["key_nf4"]],
          [subtree("root.nf.axb"), ["key_nf5", "key_nf6"]],
          [subtree("root.nf"), ["key_nf0", "key_nf1", "key_nf2", "key_nf3", "key_nf4", "key_nf5", "key_nf6"]]
        ]
        for (const [namespace, ids] of cases) {
          assert.deepStrictEqual(yield* listIds(baseSpec("keys", { namespace })), ids, JSON.stringify(namespace))
        }
      })
    )

    it.effect("name, selector and column equality filters", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        yield* repo.insert("keys", keyRow("key_sel1", "root.sel", "a", at(0), { env: "prod", tier: "gold" }))
        yield* repo.insert("keys", keyRow("key_sel2", "root.sel", "b", at(0), { env: "dev" }))
        yield* repo.insert("keys", keyRow("key_sel3", "root.sel.x", "a", at(0), {}))
        const select = (text: string) =>
          listIds(
            baseSpec("keys", { namespace: subtree("root.sel"), selector: Result.getOrThrow(parseSelector(text)) })
          )
        assert.deepStrictEqual(yield* select("env=prod"), ["key_sel1"])
        assert.deepStrictEqual(yield* select("env!=prod"), ["key_sel2", "key_sel3"])
        assert.deepStrictEqual(yield* select("!env"), ["key_sel3"])
        assert.deepStrictEqual(yield* select("env,tier=gold"), ["key_sel1"])
        assert.deepStrictEqual(yield* listIds(baseSpec("keys", { namespace: subtree("root.sel"), name: "a" })), [
          "key_sel1",
          "key_sel3"
        ])
        yield* repo.insert("rate_limits", rateLimitRow("rl_eq1", "root.eq", "r1", "enforce"))
        yield* repo.insert("rate_limits", rateLimitRow("rl_eq2", "root.eq", "r2", "observe"))
        const modes = yield* repo.list(
          baseSpec("rate_limits", { namespace: exact("root.eq"), equals: { mode: "observe" } }),
          RateLimitRow
        )
        assert.deepStrictEqual(
          modes.rows.map((row) => row.id),
          ["rl_eq2"]
        )
        yield* repo.insert("actors", actorRow("act_eq1", "root.eq", "a1"))
        yield* repo.insert("actors", actorRow("act_eq2", "root.eq", "a2"))
        const actors = yield* repo.list(baseSpec("actors", { equals: { externalId: "ext-act_eq2" } }), ActorResourceRow)
        assert.deepStrictEqual(
          actors.rows.map((row) => row.id),
          ["act_eq2"]
        )
      })
    )

    it.effect("the access filter selects exactly the rows accessAllows accepts", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const sql = yield* SqlClient.SqlClient
        const spaces = [
          "root",
          "root.acc",
          "root.acc.a",
          "root.acc.a.b",
          "root.acc.ab",
          "root.acc.a_b",
          "root.acc.axb.c"
        ]
        for (const [i, ns] of spaces.entries()) {
          yield* repo.insert("keys", keyRow(`key_acc${i}a`, ns, `acc${i}a`))
          yield* repo.insert("keys", keyRow(`key_acc${i}b`, ns, `acc${i}b`))
        }
        const live = yield* sql<{
          id: string
          namespace: string
        }>`SELECT id, namespace FROM keys WHERE deleted_at IS NULL`
        const ids = [...live.map((row) => row.id), "key_unknown"]
        const arbClause: fc.Arbitrary<AccessClause> = fc.record({
          namespace: fc.oneof(
            fc.constant({ _tag: "Any" as const }),
            fc.record({
              _tag: fc.constant("Path" as const),
              path: fc.constantFrom(...spaces, "root.acc.a_", "root.acc.axb", "root.zz"),
              subtree: fc.boolean()
            })
          ),
          ids: fc.option(fc.subarray(ids, { maxLength: 4 }), { nil: undefined })
        })
        const arbFilter: fc.Arbitrary<AccessFilter> = fc.record({
          grants: fc.array(arbClause, { maxLength: 3 }),
          restrictions: fc.option(fc.array(arbClause, { maxLength: 3 }), { nil: undefined })
        })
        const check = (filter: AccessFilter) =>
          Effect.runPromise(
            Effect.map(repo.list(baseSpec("keys", { access: filter }), KeyRow), (page) => {
              const expected = live.filter((row) => accessAllows(filter, row.namespace, row.id)).map((row) => row.id)
              assert.deepStrictEqual(
                page.rows.map((row) => row.id),
                expected.sort(),
                JSON.stringify(filter)
              )
            })
          )
        yield* Effect.promise(() => fc.assert(fc.asyncProperty(arbFilter, check), { numRuns: 150 }))
        const subtreeOnly: AccessFilter = {
          grants: [{ namespace: { _tag: "Path", path: "root.acc.a", subtree: true }, ids: undefined }],
          restrictions: [{ namespace: { _tag: "Any" }, ids: ["key_acc3a", "key_acc4a", "key_acc2b"] }]
        }
        assert.deepStrictEqual(yield* listIds(baseSpec("keys", { access: subtreeOnly })), ["key_acc2b", "key_acc3a"])
        assert.deepStrictEqual(
          yield* listIds(baseSpec("keys", { access: { grants: [], restrictions: undefined } })),
          []
        )
      })
    )

    it.effect("namespaceInUse: live child namespaces or resources in the subtree, no sibling or `_` matches", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        yield* repo.insert("namespaces", namespaceRow("root.use"))
        yield* repo.insert("namespaces", namespaceRow("root.use.child"))
        assert.isTrue(yield* repo.namespaceInUse("root.use"))
        assert.isFalse(yield* repo.namespaceInUse("root.use.child"))
        yield* repo.softDelete("namespaces", "root.use.child", at(1))
        assert.isFalse(yield* repo.namespaceInUse("root.use"))
        yield* repo.insert("keys", keyRow("key_use1", "root.busy.x", "k"))
        assert.isTrue(yield* repo.namespaceInUse("root.busy"))
        assert.isTrue(yield* repo.namespaceInUse("root.busy.x"))
        yield* repo.insert("connectors", {
          id: "cxr_use1",
          ...envelope("root.busyx", "c"),
          state: "draft",
          version: 1,
          type: "http"
        })
        yield* repo.insert("keys", keyRow("key_use2", "root.uxv.k", "k"))
        assert.isFalse(yield* repo.namespaceInUse("root.u_v"))
        yield* repo.softDelete("keys", "key_use1", at(1))
        assert.isFalse(yield* repo.namespaceInUse("root.busy"))
        assert.isTrue(yield* repo.namespaceInUse("root.busyx"))
        yield* repo.insert("rate_limits", rateLimitRow("rl_use1", "root.direct", "r", "observe"))
        assert.isTrue(yield* repo.namespaceInUse("root.direct"))
      })
    )

    it.effect("the propagation outbox: enqueue, pending in order, complete up to an id for one parent", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        yield* repo.enqueuePropagation("namespace", "root.a", at(1))
        yield* repo.enqueuePropagation("connector", "cxr_1", at(2))
        yield* repo.enqueuePropagation("namespace", "root.a", at(3))
        yield* repo.enqueuePropagation("namespace", "root.b", at(4))
        yield* repo.enqueuePropagation("namespace", "root.a", at(5))
        const pending = yield* repo.pendingPropagations(10)
        assert.deepStrictEqual(
          pending.map((task) => `${task.parentType}:${task.parentId}`),
          ["namespace:root.a", "connector:cxr_1", "namespace:root.a", "namespace:root.b", "namespace:root.a"]
        )
        const ids = pending.map((task) => BigInt(task.id))
        assert.deepStrictEqual(
          ids,
          [...ids].sort((a, b) => (a < b ? -1 : 1))
        )
        assert.deepStrictEqual(
          (yield* repo.pendingPropagations(2)).map((task) => task.id),
          [pending[0]!.id, pending[1]!.id]
        )
        yield* repo.completePropagations("connector", "root.a", pending[4]!.id)
        assert.strictEqual((yield* repo.pendingPropagations(10)).length, 5)
        yield* repo.completePropagations("namespace", "root.a", pending[2]!.id)
        assert.deepStrictEqual(
          (yield* repo.pendingPropagations(10)).map((task) => task.id),
          [pending[1]!.id, pending[3]!.id, pending[4]!.id]
        )
        yield* repo.completePropagations("namespace", "root.a", pending[4]!.id)
        yield* repo.completePropagations("connector", "cxr_1", pending[1]!.id)
        assert.deepStrictEqual(
          (yield* repo.pendingPropagations(10)).map((task) => task.id),
          [pending[3]!.id]
        )
      })
    )
  })
}
