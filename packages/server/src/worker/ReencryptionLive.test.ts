import { assert, layer } from "@effect/vitest"
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import * as Migrations from "@svc/sql/Migrations"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Effect, Layer, Queue } from "effect"
import { TestRunner } from "effect/cluster"
import { WorkflowEngine } from "effect/workflow"
import * as ReencryptionLive from "./ReencryptionLive.ts"
import { Reencryption } from "../crypto/Reencryption.ts"

// Every sweep the dispatcher runs is reported here.
const sweeps = Effect.runSync(Queue.unbounded<number>())
let sweepCount = 0

const FakeSweeper = Layer.mock(Reencryption, {
  sweep: Effect.suspend(() => {
    sweepCount++
    return Effect.as(Queue.offer(sweeps, sweepCount), { rewritten: 7, skipped: 0, failed: 0 })
  })
})

const Database = DataKeyRepo.layer.pipe(
  Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, TestDatabase.pgliteMemory))
)

const Test = ReencryptionLive.layerNoDeps({ pollInterval: "20 millis", settleDelay: "1 hour" }).pipe(
  Layer.provide([FakeSweeper, WorkflowEngine.layerMemory, TestRunner.layer]),
  Layer.provideMerge(Database)
)

/** Polls `read` until `done` holds (deadline 20 s); returns the last value. */
const until = <A>(read: Effect.Effect<A, unknown>, done: (a: A) => boolean) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 20_000
    let value = yield* read
    while (!done(value) && Date.now() < deadline) {
      yield* Effect.sleep("20 millis")
      value = yield* read
    }
    return value
  })

layer(Test, { timeout: "60 seconds", excludeTestServices: true })("ReencryptionLive", (it) => {
  it.effect("sweeps once at start, then once per batch of settled rotations, and clears what it handled", () =>
    Effect.gen(function* () {
      const repo = yield* DataKeyRepo
      assert.strictEqual(yield* Queue.take(sweeps), 1, "the start-up sweep")
      const old = new Date(Date.now() - 2 * 60 * 60 * 1000)
      yield* repo.enqueueReencryption("key_a", old)
      yield* repo.enqueueReencryption("key_b", old)
      // Too recent for the settle delay: processes may still seal under the version it replaced.
      yield* repo.enqueueReencryption("key_fresh", new Date())
      const pending = yield* until(
        Effect.map(repo.pendingReencryptions(10), (tasks) => tasks.map((task) => task.keyId)),
        (keys) => keys.length === 1
      )
      assert.deepStrictEqual(pending, ["key_fresh"])
      assert.strictEqual(yield* Queue.take(sweeps), 2, "one sweep covers both settled rotations")
      assert.strictEqual(sweepCount, 2)
    })
  )
})
