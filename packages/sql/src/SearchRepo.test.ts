import { assert, layer } from "@effect/vitest"
import type { AccessFilter } from "@svc/domain/AccessFilter"
import { Effect, Layer } from "effect"
import * as Migrations from "./Migrations.ts"
import { jsonb, ResourceRepo } from "./ResourceRepo.ts"
import { SearchRepo } from "./SearchRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"

const at = new Date(Date.UTC(2025, 0, 1, 0, 0, 0, 789))

const keyRow = (id: string, namespace: string, name: string, labels: Record<string, string> = {}) => ({
  id,
  namespace,
  name,
  labels: jsonb(labels),
  annotations: jsonb({}),
  createdAt: at,
  updatedAt: at
})

const within = (path: string, ids?: ReadonlyArray<string>): AccessFilter => ({
  grants: [{ namespace: { _tag: "Path", path, subtree: true }, ids }],
  restrictions: undefined
})

for (const [backend, db] of TestDatabase.backends) {
  const Test = Layer.mergeAll(ResourceRepo.layer, SearchRepo.layer).pipe(
    Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db))
  )

  layer(Test, { timeout: "60 seconds" })(`SearchRepo (${backend})`, (it) => {
    const hits = (access: AccessFilter, q: string, limit = 100) =>
      Effect.gen(function* () {
        const search = yield* SearchRepo
        return (yield* search.search("keys", access, q, limit)).map((row) => `${row.rank}:${row.name}`)
      })

    it.effect("ranks exact name, prefix, substring, then user-label value; case-insensitive past exact", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const rows = [
          keyRow("key_r1", "root.s", "alpha"),
          keyRow("key_r2", "root.s", "alpha-two"),
          keyRow("key_r3", "root.s.x", "ALPHA-ONE"),
          keyRow("key_r4", "root.s", "the-Alpha"),
          keyRow("key_r5", "root.s", "my-alpha"),
          keyRow("key_r6", "root.s", "zeta", { team: "Alpha-squad" }),
          keyRow("key_r7", "root.s", "omega", { "svc/ns/team": "alpha", "svc/ns/-/id": "alpha" }),
          keyRow("key_r8", "root.s", "kappa", { alpha: "x" }),
          keyRow("key_r9", "root.s", "beta"),
          keyRow("key_r10", "root.s.x", "alpha", { tier: "alpha" }),
          keyRow("key_r11", "root.s2", "alpha"),
          keyRow("key_r12", "root.s", "alpha-deleted")
        ]
        for (const row of rows) yield* repo.insert("keys", row)
        yield* repo.softDelete("keys", "key_r12", at)
        const search = yield* SearchRepo
        const found = yield* search.search("keys", within("root.s"), "alpha", 100)
        assert.deepStrictEqual(
          found.map((row) => [row.rank, row.name, row.id, row.namespace]),
          [
            [0, "alpha", "key_r1", "root.s"],
            [0, "alpha", "key_r10", "root.s.x"],
            [1, "ALPHA-ONE", "key_r3", "root.s.x"],
            [1, "alpha-two", "key_r2", "root.s"],
            [2, "my-alpha", "key_r5", "root.s"],
            [2, "the-Alpha", "key_r4", "root.s"],
            [3, "zeta", "key_r6", "root.s"]
          ]
        )
        assert.deepStrictEqual(found.at(-1)?.labels, { team: "Alpha-squad" })
        assert.deepStrictEqual((yield* hits(within("root.s"), "ALPHA")).sort(), [
          "1:ALPHA-ONE",
          "1:alpha",
          "1:alpha",
          "1:alpha-two",
          "2:my-alpha",
          "2:the-Alpha",
          "3:zeta"
        ])
        assert.deepStrictEqual(yield* hits(within("root.s"), "SQUAD"), ["3:zeta"])
        assert.deepStrictEqual(yield* hits(within("root.s"), "alpha", 3), ["0:alpha", "0:alpha", "1:ALPHA-ONE"])
      })
    )

    it.effect("LIKE metacharacters in q are literal", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        yield* repo.insert("keys", keyRow("key_m1", "root.m", "a_b"))
        yield* repo.insert("keys", keyRow("key_m2", "root.m", "axb"))
        yield* repo.insert("keys", keyRow("key_m3", "root.m", "x-a_b-y"))
        yield* repo.insert("keys", keyRow("key_m4", "root.m", "50%-off"))
        yield* repo.insert("keys", keyRow("key_m5", "root.m", "500-off", { note: "p_q" }))
        yield* repo.insert("keys", keyRow("key_m6", "root.m", "back\\slash"))
        const access = within("root.m")
        assert.deepStrictEqual(yield* hits(access, "a_b"), ["0:a_b", "2:x-a_b-y"])
        assert.deepStrictEqual(yield* hits(access, "_"), ["2:a_b", "2:x-a_b-y", "3:500-off"])
        assert.deepStrictEqual(yield* hits(access, "50%"), ["1:50%-off"])
        assert.deepStrictEqual(yield* hits(access, "%"), ["2:50%-off"])
        assert.deepStrictEqual(yield* hits(access, "%-off"), ["2:50%-off"])
        assert.deepStrictEqual(yield* hits(access, "p_q"), ["3:500-off"])
        assert.deepStrictEqual(yield* hits(access, "pxq"), [])
        assert.deepStrictEqual(yield* hits(access, "\\"), ["2:back\\slash"])
        assert.deepStrictEqual(yield* hits(access, "k\\s"), ["2:back\\slash"])
      })
    )

    it.effect("applies the access filter: namespaces, ids and restrictions", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        yield* repo.insert("keys", keyRow("key_a1", "root.acl", "gamma"))
        yield* repo.insert("keys", keyRow("key_a2", "root.acl.in", "gamma-in"))
        yield* repo.insert("keys", keyRow("key_a3", "root.aclx", "gamma-out"))
        yield* repo.insert("keys", keyRow("key_a4", "root.acl", "gamma-b", { team: "gamma" }))
        assert.deepStrictEqual(yield* hits(within("root.acl"), "gamma"), ["0:gamma", "1:gamma-b", "1:gamma-in"])
        assert.deepStrictEqual(yield* hits({ ...within("root.acl"), grants: [] }, "gamma"), [])
        assert.deepStrictEqual(yield* hits(within("root.acl", ["key_a2", "key_a3"]), "gamma"), ["1:gamma-in"])
        const exactOnly: AccessFilter = {
          grants: [{ namespace: { _tag: "Any" }, ids: undefined }],
          restrictions: [{ namespace: { _tag: "Path", path: "root.acl", subtree: false }, ids: undefined }]
        }
        assert.deepStrictEqual(yield* hits(exactOnly, "gamma"), ["0:gamma", "1:gamma-b"])
      })
    )
  })
}
