import { assert, describe, it } from "@effect/vitest"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Effect, Layer } from "effect"
import * as ClusterRuntime from "./ClusterRuntime.ts"
import { CounterEntity } from "./testing/CounterEntity.ts"
import * as CounterEntityLive from "./testing/CounterEntityLive.ts"
import { testRuntimeOptions } from "./testing/TestCluster.ts"

// Built per use: each `Effect.provide` starts a runner and stops it when the effect ends.
const runtime = CounterEntityLive.layer.pipe(Layer.provideMerge(ClusterRuntime.layerSingle(testRuntimeOptions)))

for (const [backend, database] of TestDatabase.backends) {
  describe(`CounterEntity on ${backend}`, () => {
    it.live(
      "keeps state across messages and across a runtime restart",
      () =>
        Effect.gen(function* () {
          const first = yield* Effect.gen(function* () {
            const counter = (yield* CounterEntity.client)("c-1")
            const other = (yield* CounterEntity.client)("c-2")
            const values = [
              yield* counter.Increment({ by: 1 }),
              yield* counter.Increment({ by: 2 }),
              yield* other.Increment({ by: 10 }),
              yield* counter.Increment({ by: 3 })
            ]
            return { values, get: yield* counter.Get(), otherGet: yield* other.Get() }
          }).pipe(Effect.provide(runtime))
          assert.deepStrictEqual(first, { values: [1, 3, 10, 6], get: 6, otherGet: 10 })

          const second = yield* Effect.gen(function* () {
            const counter = (yield* CounterEntity.client)("c-1")
            const before = yield* counter.Get()
            const after = yield* counter.Increment({ by: 4 })
            return { before, after, get: yield* counter.Get() }
          }).pipe(Effect.provide(runtime))
          assert.deepStrictEqual(second, { before: 6, after: 10, get: 10 })
        }).pipe(Effect.provide(database)),
      { timeout: 60_000 }
    )
  })
}
