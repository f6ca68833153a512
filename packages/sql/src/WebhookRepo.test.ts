import { assert, layer } from "@effect/vitest"
import type { AccessFilter } from "@svc/domain/AccessFilter"
import type { ConnectionId, ConnectorId } from "@svc/domain/Ids"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectionControlRepo } from "./ConnectionControlRepo.ts"
import { ConnectionRepo } from "./ConnectionRepo.ts"
import { ConnectorRepo } from "./ConnectorRepo.ts"
import * as Migrations from "./Migrations.ts"
import { NotificationRepo } from "./NotificationRepo.ts"
import { jsonb, ResourceRepo } from "./ResourceRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { at, envelope, fixtureId } from "./TestRows.ts"
import { WebhookRepo } from "./WebhookRepo.ts"

const cxr = (tag: string) => fixtureId("cxr", tag)
const cxn = (tag: string) => fixtureId("cxn", tag)

/** Rows of `path` or below. */
const within = (path: string): AccessFilter => ({
  grants: [{ namespace: { _tag: "Path", path, subtree: true }, ids: undefined }],
  restrictions: undefined
})
const none: AccessFilter = { grants: [], restrictions: undefined }

let notices = 0
/** The auto-disable notice as the delivery loop builds it (fixed content, a fresh id). */
const disabledNotice = (endpoint: { readonly id: string; readonly name: string; readonly failingSince: Date }) => ({
  id: `ntf_wh_${++notices}`,
  key: "svc.webhook_disabled",
  level: "warning" as const,
  title: "Webhook endpoint disabled",
  message: `${endpoint.name} disabled`,
  actionUrl: "/ui/#webhooks",
  metadata: { webhook_id: endpoint.id, failing_since: endpoint.failingSince.toISOString() }
})

let serial = 0
const ids = () => {
  serial++
  return { id: `whd_${serial}`, messageId: `msg_${serial}` }
}

for (const [backend, db] of TestDatabase.backends) {
  const Test = Layer.mergeAll(
    ResourceRepo.layer,
    ConnectorRepo.layer,
    ConnectionRepo.layer,
    ConnectionControlRepo.layer,
    NotificationRepo.layer,
    WebhookRepo.layer
  ).pipe(Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db)))

  layer(Test, { timeout: "60 seconds" })(`WebhookRepo (${backend})`, (it) => {
    const connector = (id: ConnectorId, namespace: string) =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const connectors = yield* ConnectorRepo
        yield* repo.insert("connectors", { id, ...envelope(namespace, id), state: "draft", version: 1, type: "http" })
        yield* connectors.insertVersion(id, { type: "http" }, at(0))
      })

    const connection = (id: ConnectionId, connectorId: ConnectorId, namespace: string, labels = {}) =>
      Effect.flatMap(ResourceRepo, (repo) =>
        repo.insert("connections", {
          id,
          ...envelope(namespace, id, at(0), labels),
          connectorId,
          connectorVersion: 1,
          state: "setup",
          healthState: "healthy",
          setupStepId: "step",
          configurationEnc: "sealed-configuration-value",
          credentialsEnc: "sealed-credentials-value"
        })
      )

    const endpoint = (
      id: string,
      namespace: string,
      extra: { events?: ReadonlyArray<string>; labelSelector?: string } = {}
    ) =>
      Effect.flatMap(ResourceRepo, (repo) =>
        repo.insert("webhooks", {
          id,
          ...envelope(namespace, id),
          url: `https://hooks.example.com/${id}`,
          events: extra.events === undefined ? null : jsonb(extra.events),
          labelSelector: extra.labelSelector ?? null,
          description: null,
          secretEnc: "sealed-secret",
          state: "enabled"
        })
      )

    const eventsOf = (connectionId: string) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql<{ type: string; data: Record<string, unknown> }>`
          SELECT type, data FROM webhook_events WHERE data->>'connection_id' = ${connectionId} ORDER BY seq`
      })

    const deliveriesOf = (webhookId: string) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return (yield* sql<{ eventType: string; data: Record<string, unknown> }>`
          SELECT d.event_type, e.data FROM webhook_deliveries d JOIN webhook_events e ON e.seq = d.event_seq
          WHERE d.webhook_id = ${webhookId} ORDER BY d.event_seq`).map(
          (row) => `${row.eventType}:${String(row.data.connection_id)}`
        )
      })

    it.effect("the triggers write the outbox in the change's own statement; never a secret column", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const connections = yield* ConnectionRepo
        const controls = yield* ConnectionControlRepo
        yield* endpoint("wh_trg", "root.trg")
        yield* connector(cxr("trg"), "root.trg")
        yield* connection(cxn("trg"), cxr("trg"), "root.trg")
        yield* connections.advanceSetup(cxn("trg"), "step", { setupStepId: null, state: "configured" }, at(1))
        yield* connections.setHealth(cxn("trg"), "unhealthy", at(2))
        yield* (yield* ConnectorRepo).insertVersion(cxr("trg"), { type: "http" }, at(2))
        yield* sql`UPDATE connections SET connector_version = 2 WHERE id = ${cxn("trg")}`
        yield* controls.save(
          cxn("trg"),
          { consecutive429s: 1, coolDownUntil: Option.some(at(100).getTime()), migrationLock: Option.none() },
          at(3)
        )
        yield* connections.markDisconnected(cxn("trg"), at(4))
        const events = yield* eventsOf(cxn("trg"))
        assert.deepStrictEqual(
          events.map((e) => e.type),
          [
            "connection.created",
            "connection.configured",
            "connection.health_changed",
            "connection.migrated",
            "connection.cool_down_started",
            "connection.disconnected"
          ]
        )
        assert.deepStrictEqual(events[2]?.data, {
          connection_id: cxn("trg"),
          namespace: "root.trg",
          connector_id: cxr("trg"),
          health_state: "unhealthy",
          previous: "healthy",
          reason: null
        })
        assert.deepStrictEqual(events[3]?.data.source_version, 1)
        assert.deepStrictEqual(events[3]?.data.target_version, 2)
        assert.strictEqual(events[4]?.data.until, at(100).toISOString())
        const text = JSON.stringify(events)
        assert.isFalse(text.includes("sealed"))
      })
    )

    it.effect("nothing is written while no live endpoint exists", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE webhooks SET deleted_at = ${at(9)}`
        yield* connector(cxr("none"), "root.none")
        yield* connection(cxn("none"), cxr("none"), "root.none")
        assert.deepStrictEqual(yield* eventsOf(cxn("none")), [])
      })
    )

    it.effect("fan-out matches namespace subtree, event types and label selectors", () =>
      Effect.gen(function* () {
        const webhooks = yield* WebhookRepo
        const sql = yield* SqlClient.SqlClient
        yield* endpoint("wh_all", "root.fan")
        yield* endpoint("wh_created", "root.fan", { events: ["connection.created"] })
        yield* endpoint("wh_gold", "root.fan", { labelSelector: "tier=gold" })
        yield* endpoint("wh_deep", "root.fan.team")
        yield* endpoint("wh_other", "root.fanother")
        yield* connector(cxr("fan"), "root.fan.team")
        yield* connection(cxn("plain"), cxr("fan"), "root.fan.team")
        yield* connection(cxn("gold"), cxr("fan"), "root.fan.team", { tier: "gold" })
        yield* connector(cxr("top"), "root.fan")
        yield* connection(cxn("top"), cxr("top"), "root.fan")
        while ((yield* webhooks.fanOut(100, at(5), ids)) > 0) {}
        const [undispatched] = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM webhook_events WHERE dispatched_at IS NULL`
        assert.strictEqual(undispatched?.n, 0)
        assert.deepStrictEqual(yield* deliveriesOf("wh_all"), [
          `connection.created:${cxn("plain")}`,
          `connection.created:${cxn("gold")}`,
          `connection.created:${cxn("top")}`
        ])
        assert.deepStrictEqual((yield* deliveriesOf("wh_created")).length, 3)
        assert.deepStrictEqual(yield* deliveriesOf("wh_gold"), [`connection.created:${cxn("gold")}`])
        assert.deepStrictEqual(yield* deliveriesOf("wh_deep"), [
          `connection.created:${cxn("plain")}`,
          `connection.created:${cxn("gold")}`
        ])
        assert.deepStrictEqual(yield* deliveriesOf("wh_other"), [])
      })
    )

    it.effect("claims respect the per-endpoint bound and busy endpoints; a lease expires; attempts record", () =>
      Effect.gen(function* () {
        const webhooks = yield* WebhookRepo
        const sql = yield* SqlClient.SqlClient
        yield* sql`UPDATE webhooks SET deleted_at = ${at(9)} WHERE deleted_at IS NULL`
        yield* endpoint("wh_slow", "root.claim")
        yield* endpoint("wh_fast", "root.claim")
        yield* connector(cxr("claim"), "root.claim")
        for (let i = 0; i < 6; i++) yield* connection(cxn(`claim${i}`), cxr("claim"), "root.claim")
        while ((yield* webhooks.fanOut(100, at(10), ids)) > 0) {}
        const first = yield* webhooks.claimDue(at(11), at(21), 100, 2, {})
        const per = (list: ReadonlyArray<{ webhookId: string }>, id: string) =>
          list.filter((d) => d.webhookId === id).length
        assert.strictEqual(per(first, "wh_slow"), 2)
        assert.strictEqual(per(first, "wh_fast"), 2)
        // Leased rows are not claimed again before the lease ends; what is in flight counts against the bound.
        const second = yield* webhooks.claimDue(at(12), at(22), 100, 3, { wh_slow: 3, wh_fast: 2 })
        assert.strictEqual(per(second, "wh_slow"), 0)
        assert.strictEqual(per(second, "wh_fast"), 1)
        const fast = first.find((d) => d.webhookId === "wh_fast")
        assert.isDefined(fast)
        yield* webhooks.recordAttempt(
          fast!.id,
          { _tag: "Failed", statusCode: 500, error: "HTTP 500", retryAt: at(100) },
          at(13)
        )
        const [row] = yield* webhooks
          .list("wh_fast", { limit: 100 })
          .pipe(Effect.map((rows) => rows.filter((d) => d.id === fast!.id)))
        assert.strictEqual(row?.state, "pending")
        assert.strictEqual(row?.attempts, 1)
        assert.strictEqual(row?.lastStatusCode, 500)
        // After the lease of the first claim ends, its unrecorded rows are due again.
        const third = yield* webhooks.claimDue(at(30), at(40), 100, 10, {})
        assert.strictEqual(per(third, "wh_slow"), 6)
        assert.strictEqual(per(third, "wh_fast"), 5)
        assert.isFalse(third.some((d) => d.id === fast!.id))
        yield* webhooks.recordAttempt(fast!.id, { _tag: "Succeeded", statusCode: 204 }, at(31))
        const done = (yield* webhooks.find("wh_fast", fast!.id))!
        assert.strictEqual(done.state, "succeeded")
        assert.strictEqual(done.attempts, 2)
        // The endpoint failed once then succeeded: its failure clock is clear, it is not disabled.
        assert.deepStrictEqual(yield* webhooks.disableFailing(at(1000), at(1000), disabledNotice), [])
        // A disabled endpoint's pending deliveries are not claimed (and do not crowd out the others).
        yield* webhooks.recordAttempt(
          third.find((d) => d.webhookId === "wh_slow")!.id,
          { _tag: "Failed", statusCode: 500, error: "HTTP 500", retryAt: at(50) },
          at(32)
        )
        assert.deepStrictEqual(yield* webhooks.disableFailing(at(32), at(33), disabledNotice), [
          { id: "wh_slow", namespace: "root.claim" }
        ])
        const fourth = yield* webhooks.claimDue(at(60), at(70), 1, 10, {})
        assert.strictEqual(per(fourth, "wh_slow"), 0)
        assert.strictEqual(per(fourth, "wh_fast"), 1)
      })
    )

    it.effect(
      "an auto-disabled endpoint raises one namespace-level notice; re-enabling or deleting it resolves it",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const webhooks = yield* WebhookRepo
          const notifications = yield* NotificationRepo
          yield* endpoint("wh_ntc", "root.ntc.team")
          yield* Effect.flatMap(ResourceRepo, (repo) =>
            repo.insert("actors", {
              id: "act_ntc",
              ...envelope("root", "act_ntc"),
              externalId: "act_ntc",
              permissions: jsonb([]),
              source: "api"
            })
          )
          const failSince = (seconds: number) =>
            sql`UPDATE webhooks SET failing_since = ${at(seconds)} WHERE id = 'wh_ntc'`
          const list = (webhookAccess: AccessFilter, access = within("root.ntc")) =>
            Effect.map(
              notifications.list({
                access,
                webhookAccess,
                actorId: "act_ntc",
                includeViewed: true,
                after: undefined,
                limit: 10
              }),
              (page) => page.rows
            )
          const active = sql<{ id: string }>`SELECT id FROM notifications
          WHERE webhook_id = 'wh_ntc' AND resolved_at IS NULL`

          yield* failSince(1)
          assert.deepStrictEqual(yield* webhooks.disableFailing(at(10), at(11), disabledNotice), [
            { id: "wh_ntc", namespace: "root.ntc.team" }
          ])
          // Already disabled: nothing more, the notice is not duplicated.
          assert.deepStrictEqual(yield* webhooks.disableFailing(at(20), at(21), disabledNotice), [])
          assert.strictEqual((yield* active).length, 1)

          const [notice] = yield* list(within("root.ntc"))
          assert.deepStrictEqual(
            [notice?.webhookId, notice?.connectionId, notice?.namespace, notice?.key, notice?.level, notice?.actionUrl],
            ["wh_ntc", null, "root.ntc.team", "svc.webhook_disabled", "warning", "/ui/#webhooks"]
          )
          assert.deepStrictEqual(notice?.metadata, { webhook_id: "wh_ntc", failing_since: at(1).toISOString() })
          const id = notice!.id
          // Without read access to the endpoint (or outside its namespace) the notice is not listed or marked.
          assert.deepStrictEqual(yield* list(none), [])
          assert.deepStrictEqual(yield* list(within("root.other")), [])
          assert.deepStrictEqual(yield* list(within("root"), none), [])
          assert.deepStrictEqual(yield* notifications.markViewed("act_ntc", [id], [], at(12), none), [])
          assert.deepStrictEqual(yield* notifications.markViewed("act_ntc", [id], [], at(12), within("root")), [id])
          assert.strictEqual(Option.getOrThrow(yield* notifications.find(id)).webhookId, "wh_ntc")

          // A notice names exactly one subject.
          const orphan = (connectionId: string | null, webhookId: string | null) =>
            Effect.flip(
              sql`INSERT INTO notifications (id, connection_id, webhook_id, namespace, key, level, title, message,
              metadata, created_at, updated_at)
              VALUES (${`ntf_bad_${webhookId}`}, ${connectionId}, ${webhookId}, 'root.ntc', 'k', 'warning', 't', 'm',
                '{}'::jsonb, ${at(1)}, ${at(1)})`
            )
          yield* orphan(null, null)
          yield* connector(cxr("ntc"), "root.ntc")
          yield* connection(cxn("ntc"), cxr("ntc"), "root.ntc")
          yield* orphan(cxn("ntc"), "wh_ntc")

          // Re-enabling resolves it (the same statement, whatever path re-enables).
          yield* sql`UPDATE webhooks SET state = 'enabled', failing_since = NULL WHERE id = 'wh_ntc'`
          assert.deepStrictEqual(yield* active, [])
          assert.isTrue(Option.isNone(yield* notifications.find(id)))
          assert.deepStrictEqual(yield* list(within("root")), [])

          // Failing again raises a new notice; deleting the endpoint resolves it.
          yield* failSince(30)
          assert.strictEqual((yield* webhooks.disableFailing(at(40), at(41), disabledNotice)).length, 1)
          const again = yield* active
          assert.strictEqual(again.length, 1)
          assert.notStrictEqual(again[0]?.id, id)
          yield* sql`UPDATE webhooks SET deleted_at = ${at(42)} WHERE id = 'wh_ntc'`
          assert.deepStrictEqual(yield* active, [])
        })
    )
  })
}
