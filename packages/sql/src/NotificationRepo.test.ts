import { assert, layer } from "@effect/vitest"
import type { AccessFilter } from "@svc/domain/AccessFilter"
import { reauthKey, setupKey, severityRule } from "@svc/domain/Notification"
import { DateTime, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectorRepo } from "./ConnectorRepo.ts"
import * as Migrations from "./Migrations.ts"
import { type NewNotice, NotificationRepo, type UpsertResult } from "./NotificationRepo.ts"
import { jsonb, ResourceRepo } from "./ResourceRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { at, envelope, fixtureId } from "./TestRows.ts"

/** Rows of `namespace` or below. */
const within = (path: string): AccessFilter => ({
  grants: [{ namespace: { _tag: "Path", path, subtree: true }, ids: undefined }],
  restrictions: undefined
})

/** No rows at all. */
const none: AccessFilter = { grants: [], restrictions: undefined }

/** The notice id of an upsert result ("" when there is none). */
const idOf = (result: UpsertResult): string => (result._tag === "NoConnection" ? "" : result.id)

let sequence = 0
/** A fresh, valid-looking notification id. */
const freshId = () => `ntf_${String(++sequence).padStart(26, "a")}`

const notice = (connectionId: string, key: string, seconds: number, extra: Partial<NewNotice> = {}): NewNotice => ({
  id: freshId(),
  connectionId,
  key,
  level: "warning",
  title: `title ${key}`,
  message: "message",
  actionUrl: `/connections/${connectionId}?action=x`,
  metadata: { n: 1 },
  now: at(seconds),
  ...extra
})

for (const [backend, db] of TestDatabase.backends) {
  const Test = Layer.mergeAll(ResourceRepo.layer, ConnectorRepo.layer, NotificationRepo.layer).pipe(
    Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db))
  )

  layer(Test, { timeout: "60 seconds" })(`NotificationRepo (${backend})`, (it) => {
    /** A connector with one version and a live connection per id, all in `namespace`. */
    const connections = (namespace: string, ids: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const connectorId = fixtureId("cxr", ids[0] ?? "")
        yield* repo.insert("connectors", {
          id: connectorId,
          ...envelope(namespace, connectorId),
          state: "draft",
          version: 1,
          type: "x"
        })
        yield* Effect.flatMap(ConnectorRepo, (c) => c.insertVersion(connectorId, { type: "x" }, at(0)))
        for (const id of ids) {
          yield* repo.insert("connections", {
            id,
            ...envelope(namespace, id),
            connectorId,
            connectorVersion: 1,
            state: "configured",
            healthState: "healthy",
            setupStepId: null,
            configurationEnc: null,
            credentialsEnc: null
          })
        }
      })

    const actor = (id: string) =>
      Effect.flatMap(ResourceRepo, (repo) =>
        repo.insert("actors", { id, ...envelope("root", id), externalId: id, permissions: jsonb([]), source: "api" })
      )

    const activeCount = (connectionId: string) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.map(
          sql<{ key: string }>`SELECT key FROM notifications
            WHERE connection_id = ${connectionId} AND resolved_at IS NULL ORDER BY key`,
          (rows) => rows.map((row) => row.key)
        )
      )

    it.effect("raising a key again reuses the active notice; changed content updates it and resets views", () =>
      Effect.gen(function* () {
        const repo = yield* NotificationRepo
        yield* connections("root.up", ["cxn_up1"])
        yield* actor("act_up1")
        const first = yield* repo.upsert(notice("cxn_up1", "k1", 1))
        assert.strictEqual(first._tag, "Created")
        const id = idOf(first)
        assert.deepStrictEqual(yield* repo.upsert(notice("cxn_up1", "k1", 2)), { _tag: "Unchanged", id })
        assert.deepStrictEqual(yield* repo.markViewed("act_up1", [id], [], at(3)), [id])
        const viewed = (yield* repo.list({
          access: within("root.up"),
          webhookAccess: none,
          actorId: "act_up1",
          includeViewed: true,
          after: undefined,
          limit: 10
        })).rows
        assert.deepStrictEqual(
          viewed.map((row) => [row.id, row.viewed]),
          [[id, true]]
        )
        const changed = notice("cxn_up1", "k1", 4, { title: "new title", level: "error", metadata: { n: 2 } })
        assert.deepStrictEqual(yield* repo.upsert(changed), { _tag: "Updated", id })
        const row = Option.getOrThrow(yield* repo.find(id))
        assert.deepStrictEqual(
          [row.title, row.level, row.metadata, row.namespace, row.connectionId, row.actionUrl],
          ["new title", "error", { n: 2 }, "root.up", "cxn_up1", "/connections/cxn_up1?action=x"]
        )
        assert.strictEqual(DateTime.toEpochMillis(row.createdAt), at(1).getTime())
        assert.strictEqual(DateTime.toEpochMillis(row.updatedAt), at(4).getTime())
        const after = (yield* repo.list({
          access: within("root.up"),
          webhookAccess: none,
          actorId: "act_up1",
          includeViewed: false,
          after: undefined,
          limit: 10
        })).rows
        assert.deepStrictEqual(
          after.map((r) => [r.id, r.viewed]),
          [[id, false]]
        )
        assert.deepStrictEqual(yield* activeCount("cxn_up1"), ["k1"])
      })
    )

    it.effect("concurrent raises of one key leave one active notice with one id", () =>
      Effect.gen(function* () {
        const repo = yield* NotificationRepo
        yield* connections("root.cc", ["cxn_cc1"])
        const results = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => repo.upsert(notice("cxn_cc1", "same", 1 + (i % 2)))),
          { concurrency: "unbounded" }
        )
        const ids = new Set(results.map(idOf))
        assert.strictEqual(ids.size, 1)
        assert.strictEqual(results.filter((result) => result._tag === "Created").length, 1)
        assert.deepStrictEqual(yield* activeCount("cxn_cc1"), ["same"])
      })
    )

    it.effect("resolve frees the key; a later raise is a new notice; unknown connections are refused", () =>
      Effect.gen(function* () {
        const repo = yield* NotificationRepo
        const resources = yield* ResourceRepo
        yield* connections("root.rs", ["cxn_rs1", "cxn_rs2"])
        const first = yield* repo.upsert(notice("cxn_rs1", "k", 1))
        assert.isTrue(yield* repo.resolve("cxn_rs1", "k", at(2)))
        assert.isFalse(yield* repo.resolve("cxn_rs1", "k", at(3)))
        assert.isFalse(yield* repo.resolve("cxn_rs1", "other", at(3)))
        assert.isTrue(Option.isNone(yield* repo.find(idOf(first))))
        const second = yield* repo.upsert(notice("cxn_rs1", "k", 4))
        assert.strictEqual(second._tag, "Created")
        assert.notStrictEqual(idOf(second), idOf(first))
        assert.deepStrictEqual(yield* repo.upsert(notice("cxn_nope", "k", 5)), { _tag: "NoConnection" })
        const gone = yield* repo.upsert(notice("cxn_rs2", "k", 5))
        yield* resources.softDelete("connections", "cxn_rs2", at(6))
        assert.deepStrictEqual(yield* repo.upsert(notice("cxn_rs2", "k2", 7)), { _tag: "NoConnection" })
        assert.isTrue(Option.isNone(yield* repo.find(idOf(gone))))
      })
    )

    it.effect("re-authentication resolves setup and blocks it until it is resolved itself", () =>
      Effect.gen(function* () {
        const repo = yield* NotificationRepo
        yield* connections("root.sv", ["cxn_sv1"])
        const setup = yield* repo.upsert(notice("cxn_sv1", setupKey, 1), severityRule(setupKey))
        yield* repo.upsert(notice("cxn_sv1", "connector.own", 1), severityRule("connector.own"))
        assert.strictEqual(setup._tag, "Created")
        const reauth = yield* repo.upsert(notice("cxn_sv1", reauthKey, 2), severityRule(reauthKey))
        assert.strictEqual(reauth._tag, "Created")
        assert.deepStrictEqual(yield* activeCount("cxn_sv1"), ["connector.own", reauthKey])
        const reauthId = idOf(reauth)
        assert.deepStrictEqual(yield* repo.upsert(notice("cxn_sv1", setupKey, 3), severityRule(setupKey)), {
          _tag: "Blocked",
          id: reauthId
        })
        assert.deepStrictEqual(yield* activeCount("cxn_sv1"), ["connector.own", reauthKey])
        assert.isTrue(yield* repo.resolve("cxn_sv1", reauthKey, at(4)))
        const again = yield* repo.upsert(notice("cxn_sv1", setupKey, 5), severityRule(setupKey))
        assert.strictEqual(again._tag, "Created")
        assert.deepStrictEqual(yield* activeCount("cxn_sv1"), ["connector.own", setupKey])
      })
    )

    it.effect("lists newest first by page, filtered by namespace access and per-actor views", () =>
      Effect.gen(function* () {
        const repo = yield* NotificationRepo
        const resources = yield* ResourceRepo
        yield* connections("root.ls.a", ["cxn_lsa1", "cxn_lsa2"])
        yield* connections("root.ls.b", ["cxn_lsb1"])
        yield* connections("root.lsx", ["cxn_lsx1"])
        yield* actor("act_ls1")
        yield* actor("act_ls2")
        const a1 = idOf(yield* repo.upsert(notice("cxn_lsa1", "k", 1)))
        const a2 = idOf(yield* repo.upsert(notice("cxn_lsa2", "k", 2)))
        const b1 = idOf(yield* repo.upsert(notice("cxn_lsb1", "k", 3)))
        yield* repo.upsert(notice("cxn_lsx1", "k", 4))
        const resolved = idOf(yield* repo.upsert(notice("cxn_lsa1", "gone", 5)))
        yield* repo.resolve("cxn_lsa1", "gone", at(6))
        const page = (actorId: string, access: AccessFilter, includeViewed: boolean) =>
          Effect.map(
            repo.list({ access, webhookAccess: none, actorId, includeViewed, after: undefined, limit: 10 }),
            (result) => result.rows.map((row) => row.id)
          )
        assert.deepStrictEqual(yield* page("act_ls1", within("root.ls"), false), [b1, a2, a1])
        assert.deepStrictEqual(yield* page("act_ls1", within("root.ls.a"), false), [a2, a1])
        const everywhere: AccessFilter = {
          grants: [{ namespace: { _tag: "Any" }, ids: undefined }],
          restrictions: [{ namespace: { _tag: "Path", path: "root.ls", subtree: true }, ids: [a1, b1] }]
        }
        assert.deepStrictEqual(yield* page("act_ls1", everywhere, false), [b1, a1])

        const marked = yield* repo.markViewed(
          "act_ls1",
          [a1, b1, resolved, "ntf_unknown", a1],
          [within("root.ls.a")],
          at(7)
        )
        assert.deepStrictEqual(marked, [a1])
        assert.deepStrictEqual(yield* repo.markViewed("act_ls1", [a1], [within("root.ls.a")], at(8)), [a1])
        assert.deepStrictEqual(yield* page("act_ls1", within("root.ls"), false), [b1, a2])
        assert.deepStrictEqual(yield* page("act_ls1", within("root.ls"), true), [b1, a2, a1])
        assert.deepStrictEqual(yield* page("act_ls2", within("root.ls"), false), [b1, a2, a1])

        const first = yield* repo.list({
          access: within("root.ls"),
          webhookAccess: none,
          actorId: "act_ls2",
          includeViewed: true,
          after: undefined,
          limit: 2
        })
        assert.deepStrictEqual([first.rows.map((row) => row.id), first.more], [[b1, a2], true])
        const last = first.rows[1]!
        const second = yield* repo.list({
          access: within("root.ls"),
          webhookAccess: none,
          actorId: "act_ls2",
          includeViewed: true,
          after: { createdAt: DateTime.formatIso(last.createdAt), id: last.id },
          limit: 2
        })
        assert.deepStrictEqual([second.rows.map((row) => row.id), second.more], [[a1], false])

        yield* resources.softDelete("connections", "cxn_lsa2", at(9))
        assert.deepStrictEqual(yield* page("act_ls2", within("root.ls"), true), [b1, a1])
        assert.deepStrictEqual(yield* repo.markViewed("act_ls2", [a2], [], at(10)), [])
      })
    )
  })
}
