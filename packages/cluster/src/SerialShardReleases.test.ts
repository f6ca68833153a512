import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { RunnerAddress, RunnerStorage, ShardId } from "effect/cluster"
import { serialShardReleases } from "./ClusterRuntime.ts"

/** A memory runner storage whose `release` takes a few milliseconds and counts how many overlap. */
const countingStorage = Effect.gen(function* () {
  const memory = yield* RunnerStorage.makeMemory
  const counts = { inFlight: 0, most: 0, released: 0 }
  const storage = RunnerStorage.RunnerStorage.of({
    ...memory,
    release: (address, shardId) =>
      Effect.gen(function* () {
        counts.inFlight++
        counts.most = Math.max(counts.most, counts.inFlight)
        yield* Effect.sleep("2 millis")
        yield* memory.release(address, shardId)
        counts.released++
        counts.inFlight--
      })
  })
  return { storage, counts }
})

const releaseAll = Effect.gen(function* () {
  const storage = yield* RunnerStorage.RunnerStorage
  const address = RunnerAddress.make("127.0.0.1", 34431)
  yield* Effect.forEach(
    Array.from({ length: 40 }, (_, i) => ShardId.make("default", i + 1)),
    (shard) => storage.release(address, shard),
    { concurrency: "unbounded" }
  )
})

describe("serialShardReleases", () => {
  it.live("runs every shard release, one at a time", () =>
    Effect.gen(function* () {
      const { storage, counts } = yield* countingStorage
      yield* releaseAll.pipe(
        Effect.provide(serialShardReleases.pipe(Layer.provide(Layer.succeed(RunnerStorage.RunnerStorage, storage))))
      )
      assert.deepStrictEqual(counts, { inFlight: 0, most: 1, released: 40 })
    })
  )

  it.live("without it, the releases of a handoff overlap (what queued them on one lock connection)", () =>
    Effect.gen(function* () {
      const { storage, counts } = yield* countingStorage
      yield* releaseAll.pipe(Effect.provide(Layer.succeed(RunnerStorage.RunnerStorage, storage)))
      assert.strictEqual(counts.released, 40)
      assert.strictEqual(counts.most, 40)
    })
  )
})
