import { assert, layer } from "@effect/vitest"
import type { Permission } from "@svc/domain/Auth"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { type NotificationInput, reauthKey, reauthNotice, setupKey, setupNotice } from "@svc/domain/Notification"
import { ConnectorRepo } from "@svc/sql/ConnectorRepo"
import * as Migrations from "@svc/sql/Migrations"
import { NotificationRepo, type UpsertResult } from "@svc/sql/NotificationRepo"
import { jsonb, ResourceRepo } from "@svc/sql/ResourceRepo"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Notifications } from "./Notifications.ts"
import { ResourceOps } from "./ResourceOps.ts"
import { at, envelope, fixtureId } from "@svc/sql/TestRows"

const createdAt = at(0)

const Test = Notifications.layerNoDeps.pipe(
  Layer.provideMerge(ResourceOps.layerNoDeps),
  Layer.provideMerge(Layer.mergeAll(ResourceRepo.layer, ConnectorRepo.layer, NotificationRepo.layer)),
  Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, TestDatabase.pglite))
)

const grant = (namespace: string, resources: ReadonlyArray<string>, verbs: ReadonlyArray<string>): Permission => ({
  namespace,
  resources,
  verbs
})

const caller = (
  id: string,
  permissions: ReadonlyArray<Permission>,
  restrictions?: ReadonlyArray<Permission>
): AuthenticatedActor => ({
  id,
  externalId: id,
  namespace: "root",
  name: id,
  labels: {},
  annotations: {},
  permissions,
  restrictions,
  service: "api",
  expiresAt: undefined
})

const admin = caller("act_admin", [grant("**", ["*"], ["*"])])

const idOf = (result: UpsertResult): string => (result._tag === "NoConnection" ? "" : result.id)

const notice = (key: string, title = `about ${key}`): NotificationInput => ({
  key,
  level: "info",
  title,
  message: "details",
  metadata: { source: "test" }
})

layer(Test, { timeout: "60 seconds" })("Notifications (PGlite)", (it) => {
  /** Live connections (and the actors of the tests) in `namespace`, one connector per call. */
  const setup = (namespace: string, ids: ReadonlyArray<string>, actors: ReadonlyArray<AuthenticatedActor> = []) =>
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
      yield* Effect.flatMap(ConnectorRepo, (c) => c.insertVersion(connectorId, { type: "x" }, createdAt))
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
      for (const actor of actors) {
        yield* repo.insert("actors", {
          id: actor.id,
          ...envelope("root", actor.id),
          externalId: actor.id,
          permissions: jsonb([]),
          source: "api"
        })
      }
    })

  const listed = (actor: AuthenticatedActor, includeViewed = false) =>
    Effect.flatMap(Notifications, (svc) => svc.list(actor, { includeViewed }))

  const ids = (actor: AuthenticatedActor, includeViewed = false) =>
    Effect.map(listed(actor, includeViewed), (page) => page.items.map((item) => item.id))

  it.effect("raising a key twice keeps one notice with one id, listed with the spec fields", () =>
    Effect.gen(function* () {
      const svc = yield* Notifications
      const reader = caller("act_twice", [grant("root.twice.**", ["notifications"], ["list"])])
      yield* setup("root.twice", ["cxn_twice"], [reader])
      yield* TestClock.adjust("1 second")
      const first = yield* svc.raise({ id: "cxn_twice" }, notice("connector.quota"))
      yield* TestClock.adjust("1 second")
      const second = yield* svc.raise({ id: "cxn_twice" }, notice("connector.quota"))
      assert.deepStrictEqual([first._tag, second._tag, idOf(second)], ["Created", "Unchanged", idOf(first)])
      assert.deepStrictEqual((yield* listed(reader)).items, [
        {
          id: idOf(first),
          key: "connector.quota",
          level: "info",
          title: "about connector.quota",
          message: "details",
          action_url: null,
          metadata: { source: "test" },
          viewed: false,
          can_action: false,
          created_at: "1970-01-01T00:00:01.000Z"
        }
      ])
    })
  )

  it.effect("re-authentication resolves setup and blocks a new setup notice", () =>
    Effect.gen(function* () {
      const svc = yield* Notifications
      const reader = caller("act_sev", [grant("root.sev.**", ["notifications"], ["list"])])
      yield* setup("root.sev", ["cxn_sev"], [reader])
      const setupResult = yield* svc.raise({ id: "cxn_sev" }, setupNotice("cxn_sev"))
      assert.strictEqual(setupResult._tag, "Created")
      assert.deepStrictEqual(
        (yield* listed(reader)).items.map((item) => [item.key, item.level, item.action_url]),
        [[setupKey, "warning", "/connections/cxn_sev?action=configure"]]
      )
      const reauth = yield* svc.raise({ id: "cxn_sev" }, reauthNotice("cxn_sev"))
      assert.strictEqual(reauth._tag, "Created")
      assert.deepStrictEqual(yield* svc.raise({ id: "cxn_sev" }, setupNotice("cxn_sev")), {
        _tag: "Blocked",
        id: idOf(reauth)
      })
      assert.deepStrictEqual(
        (yield* listed(reader)).items.map((item) => [item.id, item.key, item.action_url]),
        [[idOf(reauth), reauthKey, "/connections/cxn_sev?action=reauth"]]
      )
      assert.isTrue(yield* svc.clear("cxn_sev", reauthKey))
      assert.isFalse(yield* svc.clear("cxn_sev", reauthKey))
      assert.deepStrictEqual(yield* ids(reader), [])
    })
  )

  it.effect("viewed notices are hidden unless include_viewed, and viewed is per actor", () =>
    Effect.gen(function* () {
      const svc = yield* Notifications
      const rights = [grant("root.views.**", ["notifications"], ["list", "update"])]
      const alice = caller("act_alice", rights)
      const bob = caller("act_bob", rights)
      yield* setup("root.views", ["cxn_views1", "cxn_views2"], [alice, bob])
      const one = idOf(yield* svc.raise({ id: "cxn_views1" }, notice("k")))
      yield* TestClock.adjust("1 second")
      const two = idOf(yield* svc.raise({ id: "cxn_views2" }, notice("k")))
      assert.deepStrictEqual(yield* ids(alice), [two, one])

      yield* svc.markViewed(alice, one)
      yield* svc.markViewed(alice, one)
      assert.deepStrictEqual(yield* ids(alice), [two])
      assert.deepStrictEqual(
        (yield* listed(alice, true)).items.map((item) => [item.id, item.viewed]),
        [
          [two, false],
          [one, true]
        ]
      )
      assert.deepStrictEqual(yield* ids(bob), [two, one])

      yield* svc.markViewedBulk(bob, [one, two, "ntf_unknown"])
      assert.deepStrictEqual(yield* ids(bob), [])
      assert.deepStrictEqual(yield* ids(alice), [two])
    })
  )

  it.effect("can_action is true only for a caller that may update the connection", () =>
    Effect.gen(function* () {
      const svc = yield* Notifications
      const operator = caller("act_op", [
        grant("root.act.**", ["notifications"], ["list"]),
        grant("root.act.**", ["connections"], ["update"])
      ])
      const watcher = caller("act_watch", [
        grant("root.act.**", ["notifications"], ["list"]),
        grant("root.act.**", ["connections"], ["get", "list"])
      ])
      const narrowed = caller("act_narrow", operator.permissions, [grant("root.act.**", ["notifications"], ["*"])])
      yield* setup("root.act", ["cxn_act"], [operator, watcher, narrowed])
      const id = idOf(yield* svc.raise({ id: "cxn_act" }, reauthNotice("cxn_act")))
      // The admin sees every test's notices: only this one is compared.
      const canAction = (actor: AuthenticatedActor) =>
        Effect.map(listed(actor), (page) => page.items.filter((item) => item.id === id).map((item) => item.can_action))
      assert.deepStrictEqual(yield* canAction(operator), [true])
      assert.deepStrictEqual(yield* canAction(watcher), [false])
      assert.deepStrictEqual(yield* canAction(narrowed), [false])
      assert.deepStrictEqual(yield* canAction(admin), [true])
    })
  )

  it.effect("a notice in a namespace the caller cannot see is not listed and answers 404; visible-only is 403", () =>
    Effect.gen(function* () {
      const svc = yield* Notifications
      const outsider = caller("act_out", [grant("root.vis.mine.**", ["notifications"], ["list", "update"])])
      const readOnly = caller("act_ro", [grant("root.vis.**", ["notifications"], ["list"])])
      yield* setup("root.vis.theirs", ["cxn_vis"], [outsider, readOnly])
      const id = idOf(yield* svc.raise({ id: "cxn_vis" }, notice("k")))
      assert.deepStrictEqual(yield* ids(outsider), [])
      const hidden = yield* Effect.flip(svc.markViewed(outsider, id))
      assert.deepStrictEqual([hidden._tag, hidden.code], ["NotFound", "not_found"])
      const unknown = yield* Effect.flip(svc.markViewed(outsider, "ntf_missing"))
      assert.strictEqual(unknown._tag, "NotFound")
      const forbidden = yield* Effect.flip(svc.markViewed(readOnly, id))
      assert.deepStrictEqual([forbidden._tag, forbidden.code], ["Forbidden", "forbidden"])
      yield* svc.markViewedBulk(outsider, [id])
      yield* svc.markViewedBulk(readOnly, [id])
      assert.deepStrictEqual(yield* ids(readOnly), [id])
      yield* svc.clear("cxn_vis", "k")
      const resolved = yield* Effect.flip(svc.markViewed(admin, id))
      assert.strictEqual(resolved._tag, "NotFound")
    })
  )

  it.effect("pages follow the cursor, which carries include_viewed; a foreign cursor is 400", () =>
    Effect.gen(function* () {
      const svc = yield* Notifications
      const reader = caller("act_pages", [grant("root.pages.**", ["notifications"], ["list", "update"])])
      yield* setup("root.pages", ["cxn_pg1", "cxn_pg2", "cxn_pg3"], [reader])
      const raised: Array<string> = []
      for (const connection of ["cxn_pg1", "cxn_pg2", "cxn_pg3"]) {
        yield* TestClock.adjust("1 second")
        raised.push(idOf(yield* svc.raise({ id: connection }, notice("k"))))
      }
      yield* svc.markViewed(reader, raised[2]!)
      const first = yield* svc.list(reader, { includeViewed: true, limit: 2 })
      assert.deepStrictEqual(
        first.items.map((item) => item.id),
        [raised[2], raised[1]]
      )
      const second = yield* svc.list(reader, { includeViewed: false, limit: 2, cursor: first.cursor })
      assert.deepStrictEqual([second.items.map((item) => item.id), second.cursor], [[raised[0]], undefined])
      const bad = yield* Effect.flip(svc.list(reader, { includeViewed: false, cursor: "bm90LWEtY3Vyc29y" }))
      assert.deepStrictEqual([bad._tag, bad.code], ["BadRequest", "invalid_cursor"])
    })
  )
})
