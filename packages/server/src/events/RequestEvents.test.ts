import { sampleRequestEvent } from "@svc/sql/TestRows"
import { assert, layer } from "@effect/vitest"
import type { Permission } from "@svc/domain/Auth"
import { issueDetails } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { RequestEventListQuery } from "@svc/domain/http/RequestEventsApi"
import { type RequestEvent, requestEventFilterNames } from "@svc/domain/RequestEvent"
import { encodeCursor } from "@svc/domain/Resource"
import * as Migrations from "@svc/sql/Migrations"
import { RequestEventRepo } from "@svc/sql/RequestEventRepo"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Cause, Effect, Exit, Layer, Schema } from "effect"
import { type RequestEventListRequest, RequestEvents } from "./RequestEvents.ts"

const Test = RequestEvents.layerNoDeps.pipe(
  Layer.provideMerge(RequestEventRepo.layer),
  Layer.provideMerge(Layer.provideMerge(Migrations.layerAppMetrics, TestDatabase.pgliteMemory))
)

const grant = (namespace: string, verbs: ReadonlyArray<string>): Permission => ({
  namespace,
  resources: ["request-events"],
  verbs
})

const caller = (
  permissions: ReadonlyArray<Permission>,
  restrictions?: ReadonlyArray<Permission>
): AuthenticatedActor => ({
  id: "act_reader",
  externalId: "reader",
  namespace: "root",
  name: "reader",
  labels: {},
  annotations: {},
  permissions,
  restrictions,
  service: "api",
  expiresAt: undefined
})

const admin = caller([{ namespace: "**", resources: ["*"], verbs: ["*"] }])
const tenantA = caller([grant("root.a.**", ["list", "get"])])

const event = (id: string, namespace: string, seconds: number, extra: Partial<RequestEvent> = {}): RequestEvent =>
  sampleRequestEvent({
    id,
    namespace,
    timestamp: new Date(Date.UTC(2025, 0, 1) + seconds * 1000).toISOString(),
    ...extra
  })

const insert = (events: ReadonlyArray<RequestEvent>) =>
  Effect.flatMap(RequestEventRepo, (repo) => repo.insertBatch(events))

/** The failure of `effect` (it must fail). */
const failure = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.exit(effect), (exit) =>
    Exit.isFailure(exit) ? Effect.succeed(Cause.squash(exit.cause) as E) : Effect.die(new Error("expected a failure"))
  )

const list = (actor: AuthenticatedActor, request: RequestEventListRequest) =>
  Effect.flatMap(RequestEvents, (svc) => svc.list(actor, request))

layer(Test, { timeout: "60 seconds" })("RequestEvents", (it) => {
  it.effect("pages newest first with an opaque cursor that carries the filters", () =>
    Effect.gen(function* () {
      const events = Array.from({ length: 7 }, (_, i) => event(`req_pg_${i}`, "root.pg", 100 + i))
      yield* insert([...events, event("req_pg_other", "root.pgx", 200)])
      const first = yield* list(admin, { namespace: "root.pg", limit: 3 })
      assert.deepStrictEqual(
        first.items.map((e) => e.id),
        ["req_pg_6", "req_pg_5", "req_pg_4"]
      )
      assert.isString(first.cursor)
      // The cursor alone continues the same filtered list; repeating the same filters is fine.
      const second = yield* list(admin, { cursor: first.cursor, limit: 3 })
      const third = yield* list(admin, { namespace: "root.pg", cursor: second.cursor, limit: 3 })
      assert.deepStrictEqual(
        [...second.items, ...third.items].map((e) => e.id),
        ["req_pg_3", "req_pg_2", "req_pg_1", "req_pg_0"]
      )
      assert.isUndefined(third.cursor)
      assert.deepStrictEqual(third.items[0], events[0])
    })
  )

  it.effect("a cursor with other filters, of another list or not issued here is a 400 invalid_cursor", () =>
    Effect.gen(function* () {
      yield* insert(Array.from({ length: 3 }, (_, i) => event(`req_cur_${i}`, "root.cur", 300 + i)))
      const first = yield* list(admin, { namespace: "root.cur", limit: 1 })
      const changed = yield* failure(list(admin, { namespace: "root.other", cursor: first.cursor }))
      assert.deepStrictEqual([changed._tag, changed.code], ["BadRequest", "invalid_cursor"])
      const added = yield* failure(list(admin, { namespace: "root.cur", method: "GET", cursor: first.cursor }))
      assert.strictEqual(added.code, "invalid_cursor")
      const garbage = yield* failure(list(admin, { cursor: "not-a-cursor" }))
      assert.strictEqual(garbage.code, "invalid_cursor")
      const foreign = encodeCursor({
        filters: {},
        order: { field: "created_at", direction: "DESC" },
        after: { value: "2025-01-01T00:00:00.000Z", id: "ntf_1" }
      })
      assert.strictEqual((yield* failure(list(admin, { cursor: foreign }))).code, "invalid_cursor")
      const forged = encodeCursor({
        filters: { statusCode: "999" },
        order: { field: "timestamp", direction: "DESC" },
        after: { value: "2025-01-01T00:00:00.000Z", id: "req_x" }
      })
      assert.strictEqual((yield* failure(list(admin, { cursor: forged }))).code, "invalid_cursor")
    })
  )

  it.effect("an invalid filter or limit is a 400 whose details name the query field", () =>
    Effect.gen(function* () {
      const bad: Record<string, string> = {
        namespace: "root..a",
        connectorId: "",
        connectionId: "x".repeat(300),
        method: "GE T",
        statusCode: "42",
        statusCodeRange: "299-200",
        path: "v1/users",
        response_source: "cache",
        rate_limit_id: "",
        labelSelector: "a b=c",
        start: "yesterday",
        end: "2025-02-30"
      }
      assert.deepStrictEqual(Object.keys(bad).sort(), [...requestEventFilterNames].sort())
      const decodeQuery = Schema.decodeUnknownExit(Schema.Struct(RequestEventListQuery))
      for (const [name, value] of Object.entries(bad)) {
        const error = yield* failure(list(admin, { [name]: value }))
        assert.deepStrictEqual([error._tag, error.code], ["BadRequest", "invalid_request"], name)
        assert.deepStrictEqual(
          error.details?.map((d) => d.field),
          [`query.${name}`],
          name
        )
        // The HTTP query schema rejects the same text, with the same field, before the service runs.
        const decoded = decodeQuery({ [name]: value })
        assert.isTrue(Exit.isFailure(decoded), name)
        if (Exit.isFailure(decoded)) {
          const issue = Cause.squash(decoded.cause) as Schema.SchemaError
          assert.deepStrictEqual(
            issueDetails(issue.issue, "query").map((d) => d.field),
            [`query.${name}`],
            name
          )
        }
      }
      const window = yield* failure(list(admin, { start: "2025-01-02", end: "2025-01-01" }))
      assert.deepStrictEqual(
        window.details?.map((d) => d.field),
        ["query.end"]
      )
      for (const limit of [0, 1001, 2.5]) {
        const error = yield* failure(list(admin, { limit }))
        assert.deepStrictEqual(
          error.details?.map((d) => d.field),
          ["query.limit"]
        )
      }
    })
  )

  it.effect("filters combine, and the default page size is 100", () =>
    Effect.gen(function* () {
      yield* insert(
        Array.from({ length: 105 }, (_, i) =>
          event(`req_many_${String(i).padStart(3, "0")}`, "root.many", 1000 + i, {
            response_status_code: i % 2 === 0 ? 200 : 503,
            labels: { parity: i % 2 === 0 ? "even" : "odd" }
          })
        )
      )
      const page = yield* list(admin, { namespace: "root.many" })
      assert.strictEqual(page.items.length, 100)
      assert.isString(page.cursor)
      const odd = yield* list(admin, {
        namespace: "root.many",
        statusCodeRange: "500-599",
        labelSelector: "parity=odd"
      })
      assert.strictEqual(odd.items.length, 52)
      assert.isTrue(odd.items.every((e) => e.response_status_code === 503))
      const none = yield* list(admin, { namespace: "root.many", statusCode: "200", labelSelector: "parity=odd" })
      assert.deepStrictEqual(none, { items: [] })
    })
  )

  it.effect("an actor limited to root.a.** never sees root.b events; their get is a 404", () =>
    Effect.gen(function* () {
      const svc = yield* RequestEvents
      yield* insert([
        event("req_acc_a", "root.a", 500),
        event("req_acc_a_sub", "root.a.team", 501),
        event("req_acc_b", "root.b", 502),
        event("req_acc_ab", "root.ab", 503)
      ])
      const ids = (page: { readonly items: ReadonlyArray<RequestEvent> }) =>
        page.items.map((e) => e.id).filter((id) => id.startsWith("req_acc"))
      assert.deepStrictEqual(ids(yield* list(tenantA, {})), ["req_acc_a_sub", "req_acc_a"])
      assert.deepStrictEqual(ids(yield* list(tenantA, { namespace: "root.b" })), [])
      assert.deepStrictEqual(ids(yield* list(tenantA, { namespace: "root.**" })), ["req_acc_a_sub", "req_acc_a"])
      assert.deepStrictEqual(ids(yield* list(admin, { namespace: "root.**", limit: 1000 })), [
        "req_acc_ab",
        "req_acc_b",
        "req_acc_a_sub",
        "req_acc_a"
      ])

      assert.strictEqual((yield* svc.get(tenantA, "req_acc_a_sub")).namespace, "root.a.team")
      const crossTenant = yield* failure(svc.get(tenantA, "req_acc_b"))
      const unknown = yield* failure(svc.get(tenantA, "req_acc_missing"))
      assert.deepStrictEqual([crossTenant._tag, crossTenant.code], ["NotFound", "not_found"])
      assert.deepStrictEqual([unknown._tag, unknown.code], ["NotFound", "not_found"])

      // list without get: the event is listed but not readable one by one.
      const listOnly = caller([grant("root.b", ["list"])])
      assert.deepStrictEqual(ids(yield* list(listOnly, {})), ["req_acc_b"])
      assert.strictEqual((yield* failure(svc.get(listOnly, "req_acc_b")))._tag, "NotFound")
      // Token restrictions narrow the actor's own permissions.
      const restricted = caller([grant("root.**", ["list", "get"])], [grant("root.a", ["list", "get"])])
      assert.deepStrictEqual(ids(yield* list(restricted, {})), ["req_acc_a"])
      assert.strictEqual((yield* failure(svc.get(restricted, "req_acc_a_sub")))._tag, "NotFound")
    })
  )
})
