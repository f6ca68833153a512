import { sampleRequestEvent } from "./TestRows.ts"
import { assert, layer } from "@effect/vitest"
import type { AccessFilter } from "@svc/domain/AccessFilter"
import { parseRequestEventFilter, type RequestEvent } from "@svc/domain/RequestEvent"
import { Effect, Layer, Option, Result } from "effect"
import { SqlClient } from "effect/sql"
import * as Migrations from "./Migrations.ts"
import { insertChunkSize, RequestEventRepo } from "./RequestEventRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { at } from "./TestRows.ts"

const everything: AccessFilter = {
  grants: [{ namespace: { _tag: "Any" }, ids: undefined }],
  restrictions: undefined
}

/** Rows of `path` or below. */
const within = (path: string): AccessFilter => ({
  grants: [{ namespace: { _tag: "Path", path, subtree: true }, ids: undefined }],
  restrictions: undefined
})

const event = (id: string, seconds: number, extra: Partial<RequestEvent> = {}): RequestEvent =>
  sampleRequestEvent({ id, timestamp: at(seconds).toISOString(), duration_ms: 12.5, ...extra })

// One row per interesting value; each filter below keeps some rows and drops others.
const fixture: ReadonlyArray<RequestEvent> = [
  event("req_f1", 10, { namespace: "root.a", labels: { env: "prod" } }),
  event("req_f2", 20, {
    namespace: "root.a.sub",
    connection_id: "cxn_2",
    method: "POST",
    response_status_code: 201,
    path: "/v1/users/42",
    labels: { env: "dev" }
  }),
  event("req_f3", 30, {
    namespace: "root.b",
    connector_id: "cxr_2",
    connection_id: "cxn_3",
    response_status_code: 429,
    path: "/v1/items",
    response_source: "rate_limit",
    labels: { env: "prod", team: "x" },
    rate_limit_id: "rl_1",
    rate_limit_mode: "enforce",
    rate_limit_bucket: { "svc/cxn/-/id": "cxn_3" },
    rate_limit_matched: [{ id: "rl_1", mode: "enforce", bucket: { "svc/cxn/-/id": "cxn_3" } }]
  }),
  event("req_f4", 40, {
    namespace: "root.ab",
    connector_id: "cxr_2",
    connection_id: "cxn_4",
    method: "delete",
    response_status_code: 429,
    path: "/v2/items",
    response_source: "connector_rate_limiter"
  }),
  event("req_f5", 50, { namespace: "root.a", response_status_code: null, duration_ms: 30001, labels: { env: "prod" } })
]

for (const [backend, db] of TestDatabase.backends) {
  const Test = RequestEventRepo.layer.pipe(Layer.provideMerge(Layer.provideMerge(Migrations.layerAppMetrics, db)))

  layer(Test, { timeout: "60 seconds" })(`RequestEventRepo (${backend})`, (it) => {
    const seed = Effect.flatMap(RequestEventRepo, (repo) => repo.insertBatch(fixture))

    /** Ids of the fixture rows (newest first) that pass the filters given as query texts. */
    const ids = (texts: Record<string, string>, access: AccessFilter = everything) =>
      Effect.gen(function* () {
        const repo = yield* RequestEventRepo
        const filter = parseRequestEventFilter(texts)
        if (Result.isFailure(filter)) return yield* Effect.die(new Error(JSON.stringify(filter.failure)))
        // Other tests add thousands of rows to the shared database; one page holds them all.
        const page = yield* repo.list({ ...filter.success, access, after: undefined, limit: 10_000 })
        return page.rows.map((row) => row.id).filter((id) => id.startsWith("req_f"))
      })

    it.effect("stores an event and reads it back unchanged; unknown ids are none", () =>
      Effect.gen(function* () {
        const repo = yield* RequestEventRepo
        const written = event("req_roundtrip", 7, {
          labels: { env: "prod", "svc/act/-/id": "act_1" },
          rate_limit_id: "rl_9",
          rate_limit_mode: "observe",
          rate_limit_bucket: { "svc/act/-/id": "act_1" },
          rate_limit_matched: [{ id: "rl_9", mode: "observe", bucket: { "svc/act/-/id": "act_1" } }],
          full_request_recorded: true,
          timestamp: new Date(Date.UTC(2025, 0, 1, 0, 0, 7, 123)).toISOString()
        })
        assert.strictEqual(yield* repo.insertBatch([written]), 1)
        assert.deepStrictEqual(yield* repo.get("req_roundtrip"), Option.some(written))
        assert.deepStrictEqual(yield* repo.get("req_missing"), Option.none())
      })
    )

    it.effect("stores text that JSON escapes (quotes, backslashes, newlines, non-ASCII) unchanged", () =>
      Effect.gen(function* () {
        const repo = yield* RequestEventRepo
        const written = event("req_escapes", 8, {
          path: '/v1/search/"a\\b"/\u00e9t\u00e9/\u{1F600}/{"json":true}',
          host: "api.\u00fcber.example",
          labels: { note: 'line one\nline "two"\t\\ \u2603' },
          duration_ms: 0.000123
        })
        assert.strictEqual(yield* repo.insertBatch([written]), 1)
        assert.deepStrictEqual(yield* repo.get("req_escapes"), Option.some(written))
      })
    )

    it.effect("insertJson stores events given as JSON texts; a finer timestamp is kept to the millisecond", () =>
      Effect.gen(function* () {
        const repo = yield* RequestEventRepo
        const written = event("req_json", 9, { labels: { env: "prod" } })
        const fine = { ...event("req_micro", 9), timestamp: "2025-01-01T00:00:09.123456Z" }
        assert.strictEqual(yield* repo.insertJson([JSON.stringify(written), JSON.stringify(fine)]), 2)
        assert.deepStrictEqual(yield* repo.get("req_json"), Option.some(written))
        assert.deepStrictEqual(
          Option.map(yield* repo.get("req_micro"), (stored) => stored.timestamp),
          Option.some("2025-01-01T00:00:09.123Z")
        )
      })
    )

    it.effect("insertBatch is idempotent and splits large batches into several INSERTs", () =>
      Effect.gen(function* () {
        const repo = yield* RequestEventRepo
        const sql = yield* SqlClient.SqlClient
        const many = Array.from({ length: insertChunkSize * 2 + 17 }, (_, i) =>
          event(`req_bulk_${String(i).padStart(5, "0")}`, 1000 + i, { namespace: "root.bulk" })
        )
        assert.strictEqual(yield* repo.insertBatch(many), many.length)
        assert.strictEqual(yield* repo.insertBatch(many.slice(0, 10)), 0)
        assert.strictEqual(yield* repo.insertBatch([...many.slice(0, 3), event("req_bulk_new", 5000)]), 1)
        const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM request_events
          WHERE namespace = 'root.bulk' OR id = 'req_bulk_new'`
        assert.strictEqual(row?.n, many.length + 1)
        assert.strictEqual(yield* repo.insertBatch([]), 0)
      })
    )

    it.effect("filters by namespace path and subtree, connector, connection and method", () =>
      Effect.gen(function* () {
        yield* seed
        assert.deepStrictEqual(yield* ids({}), ["req_f5", "req_f4", "req_f3", "req_f2", "req_f1"])
        assert.deepStrictEqual(yield* ids({ namespace: "root.a" }), ["req_f5", "req_f1"])
        assert.deepStrictEqual(yield* ids({ namespace: "root.a.**" }), ["req_f5", "req_f2", "req_f1"])
        assert.deepStrictEqual(yield* ids({ connectorId: "cxr_2" }), ["req_f4", "req_f3"])
        assert.deepStrictEqual(yield* ids({ connectionId: "cxn_2" }), ["req_f2"])
        assert.deepStrictEqual(yield* ids({ method: "get" }), ["req_f5", "req_f3", "req_f1"])
        assert.deepStrictEqual(yield* ids({ method: "DELETE" }), ["req_f4"])
      })
    )

    it.effect("filters by status code, status range, path and path prefix", () =>
      Effect.gen(function* () {
        yield* seed
        assert.deepStrictEqual(yield* ids({ statusCode: "429" }), ["req_f4", "req_f3"])
        assert.deepStrictEqual(yield* ids({ statusCodeRange: "200-299" }), ["req_f2", "req_f1"])
        assert.deepStrictEqual(yield* ids({ statusCodeRange: "200-299", statusCode: "201" }), ["req_f2"])
        assert.deepStrictEqual(yield* ids({ path: "/v1/users" }), ["req_f5", "req_f1"])
        assert.deepStrictEqual(yield* ids({ path: "/v1/users*" }), ["req_f5", "req_f2", "req_f1"])
        assert.deepStrictEqual(yield* ids({ path: "/v1/*" }), ["req_f5", "req_f3", "req_f2", "req_f1"])
        // `_` and `%` in a prefix are literal characters, not LIKE wildcards.
        assert.deepStrictEqual(yield* ids({ path: "/v1/user_*" }), [])
        assert.deepStrictEqual(yield* ids({ path: "/v%" }), [])
      })
    )

    it.effect("filters by response source, rate-limit id, label selector and time range", () =>
      Effect.gen(function* () {
        yield* seed
        assert.deepStrictEqual(yield* ids({ response_source: "rate_limit" }), ["req_f3"])
        assert.deepStrictEqual(yield* ids({ response_source: "connector_rate_limiter" }), ["req_f4"])
        assert.deepStrictEqual(yield* ids({ rate_limit_id: "rl_1" }), ["req_f3"])
        assert.deepStrictEqual(yield* ids({ rate_limit_id: "rl_2" }), [])
        assert.deepStrictEqual(yield* ids({ labelSelector: "env=prod" }), ["req_f5", "req_f3", "req_f1"])
        assert.deepStrictEqual(yield* ids({ labelSelector: "env=prod,team" }), ["req_f3"])
        assert.deepStrictEqual(yield* ids({ labelSelector: "!env" }), ["req_f4"])
        const iso = (seconds: number) => at(seconds).toISOString()
        assert.deepStrictEqual(yield* ids({ start: iso(20), end: iso(40) }), ["req_f3", "req_f2"])
        assert.deepStrictEqual(yield* ids({ start: iso(40) }), ["req_f5", "req_f4"])
        assert.deepStrictEqual(yield* ids({ end: iso(20) }), ["req_f1"])
        assert.deepStrictEqual(yield* ids({ start: "2025-01-01T00:00:30+00:00", end: "2025-01-01T01:00:31+01:00" }), [
          "req_f3"
        ])
      })
    )

    it.effect("lists only what the access filter lets through", () =>
      Effect.gen(function* () {
        yield* seed
        assert.deepStrictEqual(yield* ids({}, within("root.a")), ["req_f5", "req_f2", "req_f1"])
        assert.deepStrictEqual(yield* ids({ namespace: "root.b" }, within("root.a")), [])
        assert.deepStrictEqual(yield* ids({}, { grants: [], restrictions: undefined }), [])
        // Restrictions narrow the grants; an id-scoped clause matches the event id only.
        assert.deepStrictEqual(yield* ids({}, { grants: everything.grants, restrictions: within("root.b").grants }), [
          "req_f3"
        ])
        const byId: AccessFilter = {
          grants: [{ namespace: { _tag: "Any" }, ids: ["req_f2", "cxn_3"] }],
          restrictions: undefined
        }
        assert.deepStrictEqual(yield* ids({}, byId), ["req_f2"])
      })
    )

    it.effect("pages newest first with ties on the timestamp broken by id, without gaps or repeats", () =>
      Effect.gen(function* () {
        const repo = yield* RequestEventRepo
        const events = Array.from({ length: 11 }, (_, i) =>
          event(`req_page_${String.fromCharCode(97 + i)}`, 9000 + Math.floor(i / 3), { namespace: "root.page" })
        )
        yield* repo.insertBatch([...events].reverse())
        const namespace = { path: "root.page", subtree: false }
        const seen: Array<string> = []
        let after: { readonly timestamp: string; readonly id: string } | undefined
        for (let page = 0; page < 10; page++) {
          const result = yield* repo.list({ namespace, access: everything, after, limit: 4 })
          seen.push(...result.rows.map((row) => row.id))
          const last = result.rows[result.rows.length - 1]
          if (!result.more || last === undefined) break
          after = { timestamp: last.timestamp, id: last.id }
        }
        const expected = [...events]
          .sort((a, b) => (a.timestamp === b.timestamp ? (a.id < b.id ? 1 : -1) : a.timestamp < b.timestamp ? 1 : -1))
          .map((e) => e.id)
        assert.deepStrictEqual(seen, expected)
      })
    )
  })
}
