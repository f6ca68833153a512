/**
 * Metric queries over seeded request events (spec 4.7), on PGlite and PostgreSQL: exact counts per
 * step across step boundaries (empty steps 0), groupBy per key, errors, avg and an exact p95
 * against a reference computed here, labelSelector and namespace narrowing, permission filtering
 * in SQL, and 400s naming the field.
 */
import { assert, describe, layer } from "@effect/vitest"
import type { Permission } from "@svc/domain/Auth"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import type { MetricsQueryBody } from "@svc/domain/Metrics"
import type { RequestEvent } from "@svc/domain/RequestEvent"
import * as Migrations from "@svc/sql/Migrations"
import { RequestEventRepo } from "@svc/sql/RequestEventRepo"
import { type ResourceSample, ResourceSnapshotRepo } from "@svc/sql/ResourceSnapshotRepo"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { sampleRequestEvent } from "@svc/sql/TestRows"
import { Cause, Effect, Exit, Layer } from "effect"
import { BadRequest } from "@svc/domain/Errors"
import { Metrics } from "./Metrics.ts"

const T0 = Date.UTC(2026, 0, 1)
const minute = 60_000

const caller = (permissions: ReadonlyArray<Permission>): AuthenticatedActor => ({
  id: "act_metrics",
  externalId: "metrics",
  namespace: "root",
  name: "metrics",
  labels: {},
  annotations: {},
  permissions,
  restrictions: undefined,
  service: "api",
  expiresAt: undefined
})
const admin = caller([{ namespace: "**", resources: ["*"], verbs: ["*"] }])
const tenantA = caller([{ namespace: "root.ma.**", resources: ["app-metrics"], verbs: ["query"] }])

let n = 0
const event = (namespace: string, atMs: number, extra: Partial<RequestEvent> = {}): RequestEvent =>
  sampleRequestEvent({ id: `req_m${n++}`, namespace, timestamp: new Date(atMs).toISOString(), ...extra })

/** 10-minute range in 1-minute steps; events in steps 0, 1 (two, one an error), 3 and 9; tenant b in step 0. */
const seed = (prefix: string) => {
  const a = `root.${prefix}a`
  const b = `root.${prefix}b`
  const durations = [5, 10, 20, 40, 80, 160, 320]
  return {
    a,
    b,
    durations,
    events: [
      event(a, T0 + 1_000, { method: "GET", duration_ms: 5, labels: { tier: "gold" } }),
      event(a, T0 + minute, { method: "GET", duration_ms: 10, labels: { tier: "gold" } }),
      event(a, T0 + 2 * minute - 1, {
        method: "POST",
        duration_ms: 20,
        response_status_code: 503,
        labels: { tier: "silver" }
      }),
      event(a, T0 + 3 * minute, { method: "POST", duration_ms: 40, response_status_code: null }),
      event(a, T0 + 9 * minute + 59_999, { method: "GET", duration_ms: 80 }),
      // outside the range: before it, and at its (exclusive) end
      event(a, T0 - 1, { duration_ms: 160 }),
      event(a, T0 + 10 * minute, { duration_ms: 320 }),
      event(b, T0 + 2_000, { method: "GET", duration_ms: 7 }),
      // the only event tenant A may count
      event("root.ma.x", T0 + 4 * minute, { method: "GET", duration_ms: 9 })
    ]
  }
}

const body = (queries: MetricsQueryBody["queries"], extra: Partial<MetricsQueryBody> = {}): MetricsQueryBody => ({
  range: { start: new Date(T0).toISOString(), end: new Date(T0 + 10 * minute).toISOString(), step: "1m" },
  queries,
  ...extra
})

const values = (series: { readonly points: ReadonlyArray<{ readonly value: number }> }) =>
  series.points.map((p) => p.value)

/** Exact p95 as PostgreSQL's percentile_cont computes it (linear interpolation). */
const p95 = (sorted: ReadonlyArray<number>) => {
  const rank = 0.95 * (sorted.length - 1)
  const lo = Math.floor(rank)
  const hi = Math.ceil(rank)
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (rank - lo)
}

const failure = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.exit(effect), (exit) =>
    Exit.isFailure(exit) ? Effect.succeed(Cause.squash(exit.cause) as E) : Effect.die(new Error("expected a failure"))
  )

for (const [backend, database] of TestDatabase.backends) {
  const Test = Metrics.layerNoDeps.pipe(
    Layer.provideMerge(Layer.merge(RequestEventRepo.layer, ResourceSnapshotRepo.layer)),
    Layer.provideMerge(Layer.provideMerge(Migrations.layerAppMetrics, database))
  )

  layer(Test, { timeout: "60 seconds" })(`Metrics (${backend})`, (it) => {
    describe("request_events", () => {
      it.effect("counts per step with empty steps 0, groupBy, errors, avg, exact p95, narrowing, access", () =>
        Effect.gen(function* () {
          const { a, b, events } = seed(backend)
          yield* Effect.flatMap(RequestEventRepo, (repo) => repo.insertBatch(events))
          const metrics = yield* Metrics

          const counts = yield* metrics.query(
            admin,
            body([{ refId: "A", metric: "request_events", aggregation: "count" }], { namespace: `${a}.**` })
          )
          assert.strictEqual(counts.series.length, 1)
          assert.deepStrictEqual(values(counts.series[0]!), [1, 2, 0, 1, 0, 0, 0, 0, 0, 1])
          assert.strictEqual(counts.series[0]!.points[1]!.timestamp, new Date(T0 + minute).toISOString())

          // The two namespaces together, and only the caller's when it may read one.
          const both = yield* metrics.query(
            admin,
            body([{ refId: "A", metric: "request_events", aggregation: "count" }])
          )
          const mine = yield* metrics.query(
            tenantA,
            body([{ refId: "A", metric: "request_events", aggregation: "count" }])
          )
          const total = (r: typeof both) => r.series.flatMap(values).reduce((x, y) => x + y, 0)
          assert.isAtLeast(total(both), 6)
          assert.strictEqual(
            total(
              yield* metrics.query(
                admin,
                body([{ refId: "A", metric: "request_events", aggregation: "count" }], { namespace: b })
              )
            ),
            1
          )
          // tenant A may query root.ma.** only: its one event there, in step 4.
          assert.deepStrictEqual(values(mine.series[0]!), [0, 0, 0, 0, 1, 0, 0, 0, 0, 0])

          const grouped = yield* metrics.query(
            admin,
            body(
              [
                {
                  refId: "M",
                  metric: "request_events",
                  aggregation: "count",
                  groupBy: ["method", "response_status_code"]
                },
                { refId: "E", metric: "request_events.errors", aggregation: "count" },
                { refId: "D", metric: "request_events.duration_ms", aggregation: "avg" },
                { refId: "P", metric: "request_events.duration_ms", aggregation: "p95" }
              ],
              { namespace: a }
            )
          )
          const of = (refId: string) => grouped.series.filter((s) => s.refId === refId)
          const byLabels = Object.fromEntries(
            of("M").map((s) => [`${s.labels.method}/${s.labels.response_status_code}`, values(s)])
          )
          assert.deepStrictEqual(byLabels, {
            "GET/200": [1, 1, 0, 0, 0, 0, 0, 0, 0, 1],
            "POST/503": [0, 1, 0, 0, 0, 0, 0, 0, 0, 0],
            "POST/": [0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
          })
          // Errors: the 503 and the request without an answer.
          assert.deepStrictEqual(values(of("E")[0]!), [0, 1, 0, 1, 0, 0, 0, 0, 0, 0])
          // Averages only where there are events.
          assert.deepStrictEqual(
            of("D")[0]!.points.map((p) => [p.timestamp, p.value]),
            [
              [new Date(T0).toISOString(), 5],
              [new Date(T0 + minute).toISOString(), 15],
              [new Date(T0 + 3 * minute).toISOString(), 40],
              [new Date(T0 + 9 * minute).toISOString(), 80]
            ]
          )
          assert.closeTo(of("P")[0]!.points[1]!.value, p95([10, 20]), 1e-9)

          const gold = yield* metrics.query(
            admin,
            body([{ refId: "G", metric: "request_events", aggregation: "count" }], {
              namespace: a,
              labelSelector: "tier=gold"
            })
          )
          assert.deepStrictEqual(values(gold.series[0]!), [1, 1, 0, 0, 0, 0, 0, 0, 0, 0])
        })
      )

      it.effect("p95 over many events equals percentile_cont", () =>
        Effect.gen(function* () {
          const ns = `root.${backend}p95`
          const durations = Array.from({ length: 137 }, (_, i) => (i * 7919) % 1000)
          yield* Effect.flatMap(RequestEventRepo, (repo) =>
            repo.insertBatch(durations.map((d, i) => event(ns, T0 + (i % 50) * 1000, { duration_ms: d })))
          )
          const metrics = yield* Metrics
          const result = yield* metrics.query(
            admin,
            body([{ refId: "P", metric: "request_events.duration_ms", aggregation: "p95" }], {
              namespace: ns,
              range: { start: new Date(T0).toISOString(), end: new Date(T0 + minute).toISOString(), step: "1m" }
            })
          )
          assert.closeTo(result.series[0]!.points[0]!.value, p95([...durations].sort((x, y) => x - y)), 1e-6)
        })
      )
    })

    it.effect("resources.*: each step reads the latest snapshot at or before it; deletions vanish later", () =>
      Effect.gen(function* () {
        const ns = `root.${backend}res`
        const connection = (id: string, state: string, labels: Record<string, string> = {}): ResourceSample => ({
          kind: "connections",
          resourceId: id,
          namespace: ns,
          dims: { state, health_state: "healthy", connector_id: "cxr_1", connector_version: "1" },
          labels
        })
        const repo = yield* ResourceSnapshotRepo
        // Before the range: two connections; in step 2 a third appears and one turns disabled;
        // in step 6 one is deleted (absent from that snapshot on).
        yield* repo.insert(new Date(T0 - 30_000), [
          connection("cxn_1", "configured", { tier: "gold" }),
          connection("cxn_2", "configured")
        ])
        yield* repo.insert(new Date(T0 + 2 * minute + 10_000), [
          connection("cxn_1", "configured", { tier: "gold" }),
          connection("cxn_2", "disabled"),
          connection("cxn_3", "setup", { tier: "gold" })
        ])
        yield* repo.insert(new Date(T0 + 6 * minute), [
          connection("cxn_1", "configured", { tier: "silver" }),
          connection("cxn_3", "configured", { tier: "gold" })
        ])
        const metrics = yield* Metrics
        const total = yield* metrics.query(
          admin,
          body([{ refId: "T", metric: "resources.connections", aggregation: "count" }], { namespace: ns })
        )
        assert.deepStrictEqual(values(total.series[0]!), [2, 2, 3, 3, 3, 3, 2, 2, 2, 2])
        const byState = yield* metrics.query(
          admin,
          body([{ refId: "S", metric: "resources.connections", aggregation: "count", groupBy: ["state"] }], {
            namespace: ns
          })
        )
        const states = Object.fromEntries(byState.series.map((series) => [series.labels.state, values(series)]))
        assert.deepStrictEqual(states, {
          configured: [2, 2, 1, 1, 1, 1, 2, 2, 2, 2],
          disabled: [0, 0, 1, 1, 1, 1, 0, 0, 0, 0],
          setup: [0, 0, 1, 1, 1, 1, 0, 0, 0, 0]
        })
        // Labels as they were at each snapshot: cxn_1 stops being gold in the last one.
        const gold = yield* metrics.query(
          admin,
          body([{ refId: "G", metric: "resources.connections", aggregation: "count" }], {
            namespace: ns,
            labelSelector: "tier=gold"
          })
        )
        assert.deepStrictEqual(values(gold.series[0]!), [1, 1, 2, 2, 2, 2, 1, 1, 1, 1])
        // Steps before the first snapshot have no point.
        const early = yield* metrics.query(admin, {
          range: {
            start: new Date(T0 - 3 * minute).toISOString(),
            end: new Date(T0 + minute).toISOString(),
            step: "1m"
          },
          namespace: ns,
          queries: [{ refId: "E", metric: "resources.connections", aggregation: "count" }]
        })
        assert.deepStrictEqual(
          early.series[0]!.points.map((p) => [p.timestamp, p.value]),
          [
            [new Date(T0 - minute).toISOString(), 2],
            [new Date(T0).toISOString(), 2]
          ]
        )
        // Another tenant's caller counts none of it.
        const other = yield* metrics.query(
          tenantA,
          body([{ refId: "T", metric: "resources.connections", aggregation: "count" }], { namespace: ns })
        )
        assert.deepStrictEqual(values(other.series[0]!), [0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
      })
    )

    it.effect("400 names each invalid field", () =>
      Effect.gen(function* () {
        const metrics = yield* Metrics
        const error = yield* failure(
          metrics.query(admin, {
            range: { start: "2026-01-02T00:00:00Z", end: "2026-01-01T00:00:00Z", step: "1m" },
            namespace: "not a namespace",
            labelSelector: "tier in (a",
            queries: [
              { refId: "A", metric: "request_events.bogus", aggregation: "count" },
              { refId: "B", metric: "request_events.duration_ms", aggregation: "count", groupBy: ["state"] },
              { refId: "C", metric: "resources.connections", aggregation: "avg" }
            ]
          })
        )
        assert.instanceOf(error, BadRequest)
        const fields = (error as BadRequest).details?.map((d) => d.field) ?? []
        for (const field of [
          "body.range.end",
          "body.namespace",
          "body.labelSelector",
          "body.queries[0].metric",
          "body.queries[1].aggregation",
          "body.queries[1].groupBy[0]",
          "body.queries[2].aggregation"
        ]) {
          assert.include(fields, field)
        }
        const tooMany = yield* failure(
          metrics.query(admin, {
            range: { start: "2026-01-01T00:00:00Z", end: "2026-03-01T00:00:00Z", step: "1s" },
            queries: [{ refId: "A", metric: "request_events", aggregation: "count" }]
          })
        )
        assert.deepStrictEqual(
          (tooMany as BadRequest).details?.map((d) => d.field),
          ["body.range.step"]
        )
      })
    )
  })
}
