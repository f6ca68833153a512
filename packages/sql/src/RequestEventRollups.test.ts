/**
 * Per-minute rollups of request events (issue 19 item 4): several `insertBatch` calls hitting the
 * same minutes (and re-sending stored ids) leave rollups equal to the raw events for counts,
 * errors and averages per groupBy key; a p95 from the histograms stays within the documented bound
 * of `percentile_cont`; retention deletes the rollups of whole expired minutes; the migration
 * rolls up the events stored before it.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import type { AccessFilter } from "@svc/domain/AccessFilter"
import type { RequestEvent } from "@svc/domain/RequestEvent"
import { Effect, Layer } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import * as Migrations from "./Migrations.ts"
import metrics0001 from "./migrations/metrics/0001_request_events.ts"
import metrics0002 from "./migrations/metrics/0002_request_event_indexes.ts"
import metrics0003 from "./migrations/metrics/0003_resource_snapshots.ts"
import { type GroupableColumn, type RequestEventAggregation, RequestEventRepo } from "./RequestEventRepo.ts"
import { bucketLowerMs, bucketUpperMs, durationBuckets, histogramP95 } from "./RequestEventRollupSql.ts"
import { RetentionRepo } from "./RetentionRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { sampleRequestEvent } from "./TestRows.ts"

const T0 = Date.UTC(2027, 2, 1)
const minute = 60_000
const everything: AccessFilter = { grants: [{ namespace: { _tag: "Any" }, ids: undefined }], restrictions: undefined }

/** Exact p95 as PostgreSQL's percentile_cont computes it (linear interpolation). */
const exactP95 = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((x, y) => x - y)
  const rank = 0.95 * (sorted.length - 1)
  const lo = Math.floor(rank)
  return sorted[lo]! + (sorted[Math.ceil(rank)]! - sorted[lo]!) * (rank - lo)
}

/** A deterministic pseudo-random sequence in [0, 1). */
const random = (seed: number) => () => {
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed / 2147483648
}

/** `n` events over `minutes` minutes from T0 in `namespace`, with varied keys and durations. */
const events = (namespace: string, n: number, minutes: number, prefix: string): Array<RequestEvent> => {
  const next = random(n + minutes)
  return Array.from({ length: n }, (_, i) =>
    sampleRequestEvent({
      id: `req_${prefix}${i}`,
      namespace,
      timestamp: new Date(T0 + Math.floor(next() * minutes * minute)).toISOString(),
      method: i % 3 === 0 ? "POST" : "GET",
      response_status_code: i % 7 === 0 ? null : i % 5 === 0 ? 502 : i % 4 === 0 ? 404 : 200,
      response_source: i % 9 === 0 ? "rate_limit" : "upstream",
      connector_id: i % 6 === 0 ? null : `cxr_${i % 2}`,
      duration_ms: 0.2 + 3000 * next() ** 3
    })
  )
}

/** The expected cells of counts, errors and averages per minute step, from the events themselves. */
const expected = (
  all: ReadonlyArray<RequestEvent>,
  groupBy: ReadonlyArray<GroupableColumn>,
  stepMs: number,
  pick: (events: ReadonlyArray<RequestEvent>) => number | undefined
) => {
  const cells = new Map<string, Array<RequestEvent>>()
  for (const e of all) {
    const step = Math.floor((new Date(e.timestamp).getTime() - T0) / stepMs)
    const key = JSON.stringify([step, ...groupBy.map((g) => (e[g] === null ? null : String(e[g])))])
    cells.set(key, [...(cells.get(key) ?? []), e])
  }
  const out = new Map<string, number>()
  for (const [key, group] of cells) {
    const value = pick(group)
    if (value !== undefined) out.set(key, value)
  }
  return out
}

const isError = (e: RequestEvent) => e.response_status_code === null || e.response_status_code >= 500

describe("histogramP95", () => {
  it("stays within one bucket (33.4% of the exact value) over skewed distributions", () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const next = random(seed)
      const values = Array.from({ length: 5000 }, () => 0.5 + 20_000 * next() ** (seed + 1))
      const counts = Array.from({ length: durationBuckets }, () => 0)
      for (const v of values) {
        const k = v < 1 ? 0 : Math.min(durationBuckets - 1, 1 + Math.floor(8 * Math.log10(v)))
        counts[k]!++
      }
      const exact = exactP95(values)
      const estimate = histogramP95(counts, Math.max(...values))!
      assert.isAtMost(Math.abs(estimate - exact), Math.max(1, 0.334 * exact))
    }
    assert.strictEqual(
      histogramP95(
        Array.from({ length: durationBuckets }, () => 0),
        0
      ),
      undefined
    )
    assert.strictEqual(bucketLowerMs(0), 0)
    assert.closeTo(bucketUpperMs(8) / bucketLowerMs(8), 10 ** (1 / 8), 1e-12)
    assert.strictEqual(bucketUpperMs(durationBuckets - 1), Number.POSITIVE_INFINITY)
  })
})

layer(TestDatabase.pgliteMemory, { timeout: "60 seconds" })("migration 0004", (it) => {
  it.effect("rolls up the events stored before it", () =>
    Effect.gen(function* () {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      yield* Migrator.make({})({
        loader: Migrator.fromRecord({
          "0001_request_events": metrics0001,
          "0002_request_event_indexes": metrics0002,
          "0003_resource_snapshots": metrics0003
        }),
        table: Migrations.appMetricsTable
      })
      const before = events("root.backfill", 300, 5, "rb")
      for (const e of before) {
        yield* sql`INSERT INTO request_events (id, timestamp, namespace, type, method, host, path,
          response_status_code, response_source, connector_id, duration_ms)
          VALUES (${e.id}, ${new Date(e.timestamp)}, ${e.namespace}, ${e.type}, ${e.method}, ${e.host}, ${e.path},
          ${e.response_status_code}, ${e.response_source}, ${e.connector_id}, ${e.duration_ms})`
      }
      assert.deepStrictEqual(yield* Migrations.migrateAppMetrics, [
        [4, "request_event_rollups"],
        [5, "request_event_write_indexes"]
      ])
      const repo = yield* RequestEventRepo.make
      for (const groupBy of [[], ["method", "response_status_code", "connector_id"]] as const) {
        const query: RequestEventAggregation = {
          access: everything,
          namespace: { path: "root.backfill", subtree: false },
          selector: undefined,
          start: new Date(T0),
          end: new Date(T0 + 5 * minute),
          startMs: T0,
          stepMs: minute,
          groupBy,
          aggregation: "count",
          errorsOnly: true
        }
        const errors = yield* repo.aggregate(query)
        assert.deepStrictEqual(
          new Map(errors.map((c) => [JSON.stringify([c.step, ...c.groups]), c.value])),
          expected(before, groupBy, minute, (g) => g.filter(isError).length || undefined)
        )
      }
    })
  )
})

for (const [backend, db] of TestDatabase.backends) {
  const Test = Layer.mergeAll(RequestEventRepo.layer, RetentionRepo.layer).pipe(
    Layer.provideMerge(Layer.provideMerge(Migrations.layerAppMetrics, db))
  )

  layer(Test, { timeout: "60 seconds" })(`request-event rollups (${backend})`, (it) => {
    const query = (namespace: string, extra: Partial<RequestEventAggregation>): RequestEventAggregation => ({
      access: everything,
      namespace: { path: namespace, subtree: false },
      selector: undefined,
      start: new Date(T0),
      end: new Date(T0 + 30 * minute),
      startMs: T0,
      stepMs: 5 * minute,
      groupBy: [],
      aggregation: "count",
      errorsOnly: false,
      ...extra
    })

    const cells = (rows: ReadonlyArray<{ step: number; groups: ReadonlyArray<string | null>; value: number }>) =>
      new Map(rows.map((c) => [JSON.stringify([c.step, ...c.groups]), c.value]))

    it.effect("several batches over the same minutes: counts, errors and averages equal the raw events", () =>
      Effect.gen(function* () {
        const repo = yield* RequestEventRepo
        const sql = (yield* SqlClient.SqlClient).withoutTransforms()
        const ns = `root.rollups${backend}`
        const all = events(ns, 1500, 30, `ru${backend}`)
        // Overlapping batches: every minute is hit by several of them; the overlap is stored once.
        assert.strictEqual(yield* repo.insertBatch(all.slice(0, 400)), 400)
        assert.strictEqual(yield* repo.insertBatch(all.slice(300, 900)), 500)
        assert.strictEqual(yield* repo.insertBatch(all.slice(0, 1500)), 600)
        assert.strictEqual(yield* repo.insertBatch(all.slice(1000, 1100)), 0)

        const [stored] = yield* sql<{ readonly n: number; readonly rows: number }>`
          SELECT CAST(sum(count) AS integer) AS n, CAST(count(*) AS integer) AS rows
          FROM request_event_rollups WHERE namespace = ${ns}`
        assert.strictEqual(stored?.n, 1500)
        assert.isBelow(stored?.rows ?? 0, 1500)

        for (const groupBy of [
          [],
          ["method", "response_status_code"],
          ["connector_id", "response_source", "type"]
        ] as const) {
          for (const stepMs of [minute, 5 * minute]) {
            const counts = yield* repo.aggregate(query(ns, { groupBy, stepMs }))
            assert.deepStrictEqual(
              cells(counts),
              expected(all, groupBy, stepMs, (g) => g.length)
            )
            const errors = yield* repo.aggregate(query(ns, { groupBy, stepMs, errorsOnly: true }))
            assert.deepStrictEqual(
              cells(errors),
              expected(all, groupBy, stepMs, (g) => g.filter(isError).length || undefined)
            )
            const avg = cells(yield* repo.aggregate(query(ns, { groupBy, stepMs, aggregation: "avg" })))
            const avgExpected = expected(
              all,
              groupBy,
              stepMs,
              (g) => g.reduce((x, e) => x + e.duration_ms, 0) / g.length
            )
            assert.deepStrictEqual([...avg.keys()].sort(), [...avgExpected.keys()].sort())
            for (const [key, value] of avgExpected) assert.closeTo(avg.get(key)!, value, 1e-6 * value)
          }
        }
      })
    )

    it.effect("a p95 over many events comes from the histograms within the documented bound", () =>
      Effect.gen(function* () {
        const repo = yield* RequestEventRepo.makeWith({ exactP95MaxEvents: 0 })
        const ns = `root.rollupsp95${backend}`
        const all = events(ns, 2000, 10, `rp${backend}`)
        yield* repo.insertBatch(all)
        const [cell] = yield* repo.aggregate(query(ns, { aggregation: "p95", stepMs: 10 * minute }))
        const exact = exactP95(all.map((e) => e.duration_ms))
        assert.isDefined(cell)
        assert.isAtMost(Math.abs(cell!.value - exact), 0.334 * exact)
        // An estimate, not percentile_cont's answer (the seeded durations are deterministic).
        assert.isAbove(Math.abs(cell!.value - exact), 1e-6)
        // Below the threshold the p95 is exact (percentile_cont over the raw rows).
        const [exactCell] = yield* (yield* RequestEventRepo).aggregate(
          query(ns, { aggregation: "p95", stepMs: 10 * minute })
        )
        assert.closeTo(exactCell!.value, exact, 1e-6)
      })
    )

    it.effect("retention deletes the rollups of whole minutes before the cutoff", () =>
      Effect.gen(function* () {
        const repo = yield* RequestEventRepo
        const retention = yield* RetentionRepo
        const sql = (yield* SqlClient.SqlClient).withoutTransforms()
        const ns = `root.rollupsret${backend}`
        const base = Date.UTC(2020, 0, 1)
        yield* repo.insertBatch(
          Array.from({ length: 6 }, (_, i) =>
            sampleRequestEvent({
              id: `req_rr${backend}${i}`,
              namespace: ns,
              timestamp: new Date(base + i * minute + 30_000).toISOString()
            })
          )
        )
        const minutes = sql<{ readonly minute: Date }>`
          SELECT minute FROM request_event_rollups WHERE namespace = ${ns} ORDER BY minute`
        assert.strictEqual((yield* minutes).length, 6)
        // The cutoff falls inside minute 3: minutes 0, 1 and 2 go, in batches of 2.
        const cutoff = new Date(base + 3 * minute + 10_000)
        assert.strictEqual(yield* retention.deleteRollups(cutoff, 2), 2)
        assert.strictEqual(yield* retention.deleteRollups(cutoff, 2), 1)
        assert.strictEqual(yield* retention.deleteRollups(cutoff, 2), 0)
        assert.deepStrictEqual(
          (yield* minutes).map((row) => new Date(row.minute).getTime()),
          [3, 4, 5].map((i) => base + i * minute)
        )
      })
    )
  })
}
