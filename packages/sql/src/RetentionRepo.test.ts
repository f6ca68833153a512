import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Migrations from "./Migrations.ts"
import { RequestEventRepo } from "./RequestEventRepo.ts"
import { RetentionRepo } from "./RetentionRepo.ts"
import { type ResourceSample, ResourceSnapshotRepo } from "./ResourceSnapshotRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { at, sampleRequestEvent } from "./TestRows.ts"

/** Twelve events a minute apart (`req_r00` … `req_r11`); every third one recorded. */
const events = Array.from({ length: 12 }, (_, i) =>
  sampleRequestEvent({
    id: `req_r${String(i).padStart(2, "0")}`,
    timestamp: at(i * 60).toISOString(),
    full_request_recorded: i % 3 === 0
  })
)

const sample = (kind: ResourceSample["kind"], id: string): ResourceSample => ({
  kind,
  resourceId: id,
  namespace: "root",
  dims: { state: "active" },
  labels: {}
})

for (const [backend, db] of TestDatabase.backends) {
  const Test = Layer.mergeAll(RetentionRepo.layer, RequestEventRepo.layer, ResourceSnapshotRepo.layer).pipe(
    Layer.provideMerge(Layer.provideMerge(Migrations.layerAppMetrics, db))
  )

  layer(Test, { timeout: "60 seconds" })(`RetentionRepo (${backend})`, (it) => {
    const remainingEvents = Effect.flatMap(
      SqlClient.SqlClient,
      (client) =>
        client.withoutTransforms()<{
          readonly id: string
        }>`SELECT id FROM request_events WHERE id LIKE 'req_r%' ORDER BY id`
    ).pipe(Effect.map((rows) => rows.map((row) => row.id)))

    it.effect("finds the oldest expired events in batches and deletes only those", () =>
      Effect.gen(function* () {
        const repo = yield* RetentionRepo
        yield* (yield* RequestEventRepo).insertBatch(events)
        // Expired: stamped before minute 6; the event at minute 6 itself stays.
        const cutoff = at(6 * 60)
        const first = yield* repo.expiredEvents(cutoff, 4)
        assert.deepStrictEqual(first, [
          { id: "req_r00", recorded: true },
          { id: "req_r01", recorded: false },
          { id: "req_r02", recorded: false },
          { id: "req_r03", recorded: true }
        ])
        assert.strictEqual(yield* repo.deleteEvents(first.map((e) => e.id)), 4)
        const second = yield* repo.expiredEvents(cutoff, 4)
        assert.deepStrictEqual(
          second.map((e) => e.id),
          ["req_r04", "req_r05"]
        )
        assert.strictEqual(yield* repo.deleteEvents(second.map((e) => e.id)), 2)
        assert.deepStrictEqual(yield* repo.expiredEvents(cutoff, 4), [])
        assert.strictEqual(yield* repo.deleteEvents([]), 0)
        assert.deepStrictEqual(
          yield* remainingEvents,
          events.slice(6).map((e) => e.id)
        )
      })
    )

    it.effect("deletes snapshots taken before the cutoff, at most a batch per statement", () =>
      Effect.gen(function* () {
        const repo = yield* RetentionRepo
        const snapshots = yield* ResourceSnapshotRepo
        const times = [at(0), at(900), at(1800)]
        for (const takenAt of times) {
          yield* snapshots.insert(takenAt, [
            sample("connections", "cxn_1"),
            sample("connections", "cxn_2"),
            sample("actors", "act_1")
          ])
        }
        // Six rows were taken before the last snapshot: a batch of 4, then the 2 left, then none.
        assert.strictEqual(yield* repo.deleteSnapshots(times[2] ?? at(0), 4), 4)
        assert.strictEqual(yield* repo.deleteSnapshots(times[2] ?? at(0), 4), 2)
        assert.strictEqual(yield* repo.deleteSnapshots(times[2] ?? at(0), 4), 0)
        const sql = (yield* SqlClient.SqlClient).withoutTransforms()
        const left = yield* sql<{ readonly taken_at: Date | string; readonly n: number }>`
          SELECT taken_at, CAST(count(*) AS integer) AS n FROM resource_snapshots GROUP BY taken_at`
        assert.deepStrictEqual(
          left.map((row) => ({ takenAt: new Date(row.taken_at).toISOString(), n: Number(row.n) })),
          [{ takenAt: at(1800).toISOString(), n: 3 }]
        )
      })
    )
  })
}
