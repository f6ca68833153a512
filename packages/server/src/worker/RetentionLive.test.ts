import { assert, it, layer } from "@effect/vitest"
import type { RequestEvent } from "@svc/domain/RequestEvent"
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import * as Migrations from "@svc/sql/Migrations"
import { RequestEventRepo } from "@svc/sql/RequestEventRepo"
import { type ResourceSample, ResourceSnapshotRepo } from "@svc/sql/ResourceSnapshotRepo"
import { RetentionRepo, retentionBatchSize } from "@svc/sql/RetentionRepo"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { sampleRequestEvent } from "@svc/sql/TestRows"
import { Effect, Exit, Layer, Option } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import * as Envelope from "../crypto/Envelope.ts"
import { Encryption } from "../crypto/Encryption.ts"
import { BlobStorage, BlobStorageError } from "../events/BlobStorage.ts"
import { Recordings, recordingKeys } from "../events/Recordings.ts"
import { loadConfig } from "../config/ConfigLoader.ts"
import { batchSizeFor, embeddedBatchSize, runPass } from "./RetentionLive.ts"

const day = 24 * 60 * 60 * 1000
/**
 * Ages are relative to the real clock (`TestClock.withLive`: the PostgreSQL pool misbehaves when a
 * test clock jumps years ahead); every one is at least a minute away from a cutoff.
 */
const now = Date.now()
const options = { requestEvents: "30 days", resourceSnapshots: "7 days", batchSize: 3, pause: 0 } as const

/** Memory blobs whose removals fail while `failing.removals` is set. */
const failing = { removals: false }
const Blobs = Layer.effect(
  BlobStorage,
  Effect.map(Effect.service(BlobStorage), (memory) =>
    BlobStorage.of({
      ...memory,
      remove: (key) =>
        failing.removals
          ? Effect.fail(new BlobStorageError({ provider: "memory", operation: "remove", reason: "test outage" }))
          : memory.remove(key)
    })
  )
).pipe(Layer.provide(BlobStorage.layerMemory))

const event = (id: string, ageMs: number, recorded: boolean): RequestEvent =>
  sampleRequestEvent({ id, timestamp: new Date(now - ageMs).toISOString(), full_request_recorded: recorded })

const sample = (id: string): ResourceSample => ({
  kind: "connections",
  resourceId: id,
  namespace: "root",
  dims: { state: "ready" },
  labels: {}
})

for (const [backend, db] of TestDatabase.backends) {
  const Stores = Layer.mergeAll(RetentionRepo.layer, RequestEventRepo.layer, ResourceSnapshotRepo.layer).pipe(
    Layer.provideMerge(DataKeyRepo.layer),
    Layer.provideMerge(Migrations.layerAppMetrics),
    Layer.provideMerge(Migrations.layerMain),
    Layer.provideMerge(db)
  )
  const Test = Recordings.layerNoDeps().pipe(
    Layer.provideMerge(Layer.mergeAll(Blobs, Encryption.layerKey(Envelope.generateKey()))),
    Layer.provideMerge(Stores)
  )

  layer(Test, { timeout: "60 seconds" })(`Retention pass (${backend})`, (it) => {
    const ids = (prefix: string) =>
      Effect.flatMap(
        SqlClient.SqlClient,
        (client) =>
          client.withoutTransforms()<{ readonly id: string }>`
          SELECT id FROM request_events WHERE id LIKE ${`${prefix}%`} ORDER BY id`
      ).pipe(Effect.map((rows) => rows.map((row) => row.id)))

    const hasBlobs = (id: string) =>
      Effect.gen(function* () {
        const storage = yield* BlobStorage
        const keys = recordingKeys(id)
        return Option.isSome(yield* storage.get(keys.request)) && Option.isSome(yield* storage.get(keys.response))
      })

    const seed = (events: ReadonlyArray<RequestEvent>) =>
      Effect.gen(function* () {
        yield* (yield* RequestEventRepo).insertBatch(events)
        const storage = yield* BlobStorage
        for (const e of events.filter((e) => e.full_request_recorded)) {
          const keys = recordingKeys(e.id)
          yield* storage.put(keys.request, new Uint8Array([1]))
          yield* storage.put(keys.response, new Uint8Array([2]))
        }
      })

    it.effect("deletes only expired events and snapshots, in batches, with the blobs of recorded events", () =>
      TestClock.withLive(
        Effect.gen(function* () {
          // Seven events past the 30-day retention (every other one recorded), three within it.
          const expired = Array.from({ length: 7 }, (_, i) => event(`req_a_old${i}`, 31 * day - i * 1000, i % 2 === 0))
          const kept = [
            event("req_a_new0", 30 * day - 60_000, true),
            event("req_a_new1", day, false),
            event("req_a_new2", 0, true)
          ]
          yield* seed([...expired, ...kept])
          const snapshots = yield* ResourceSnapshotRepo
          yield* snapshots.insert(new Date(now - 8 * day), [sample("cxn_1"), sample("cxn_2")])
          yield* snapshots.insert(new Date(now - 6 * day), [sample("cxn_1")])

          const pass = yield* runPass(options)
          // Events in batches of 3 (3, 3, 1), then one snapshot batch of 2.
          assert.deepStrictEqual(pass, { events: 7, recordings: 4, snapshots: 2, batches: 4 })
          assert.deepStrictEqual(
            yield* ids("req_a_"),
            kept.map((e) => e.id)
          )
          for (const e of expired.filter((e) => e.full_request_recorded)) {
            assert.isFalse(yield* hasBlobs(e.id), `blobs of ${e.id} removed`)
          }
          assert.isTrue(yield* hasBlobs("req_a_new0"))
          assert.isTrue(yield* hasBlobs("req_a_new2"))
          const sql = (yield* SqlClient.SqlClient).withoutTransforms()
          const left = yield* sql<{ readonly taken_at: Date | string }>`SELECT taken_at FROM resource_snapshots`
          assert.deepStrictEqual(
            left.map((row) => new Date(row.taken_at).getTime()),
            [now - 6 * day]
          )

          assert.deepStrictEqual(yield* runPass(options), { events: 0, recordings: 0, snapshots: 0, batches: 1 })
        })
      )
    )

    it.effect("keeps the row of an event whose recording could not be removed, and removes both next time", () =>
      TestClock.withLive(
        Effect.gen(function* () {
          yield* seed([event("req_b_old0", 40 * day, true), event("req_b_old1", 40 * day - 1000, false)])
          failing.removals = true
          const failed = yield* Effect.exit(runPass(options)).pipe(
            Effect.ensuring(
              Effect.sync(() => {
                failing.removals = false
              })
            )
          )
          assert.isTrue(Exit.isFailure(failed))
          assert.deepStrictEqual(yield* ids("req_b_"), ["req_b_old0", "req_b_old1"])
          assert.isTrue(yield* hasBlobs("req_b_old0"))

          const pass = yield* runPass(options)
          assert.strictEqual(pass.events, 2)
          assert.strictEqual(pass.recordings, 1)
          assert.deepStrictEqual(yield* ids("req_b_"), [])
          assert.isFalse(yield* hasBlobs("req_b_old0"))
        })
      )
    )
  })
}

it.effect("batches of 1,000 on the embedded database, 5,000 on PostgreSQL", () =>
  Effect.acquireUseRelease(
    // An empty directory: no svc.yaml, the embedded default.
    Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "svc-retention-"))),
    (cwd) =>
      Effect.gen(function* () {
        assert.strictEqual(batchSizeFor(yield* loadConfig({ cwd, env: {} })), embeddedBatchSize)
        const separate = yield* loadConfig({
          cwd,
          env: {
            SVC__appMetrics__database__provider: "postgres",
            SVC__appMetrics__database__url: "postgres://svc@127.0.0.1:5432/svc_metrics"
          }
        })
        assert.strictEqual(batchSizeFor(separate), retentionBatchSize)
      }),
    (cwd) => Effect.sync(() => fs.rmSync(cwd, { recursive: true, force: true }))
  )
)
