import { randomUUID } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Clock, Duration, Effect, type Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { Redis } from "ioredis"
import { CoolDownStore, coolDownKey } from "./CoolDownStore.ts"
import type { StoreUnavailable } from "./CounterStore.ts"

const redisUrl = "redis://127.0.0.1:6379"
const uniqueRedisPrefix = (): string => `svc-test:${randomUUID()}:`

type Store = CoolDownStore["Service"]

interface Backend {
  readonly name: string
  readonly layer: () => Layer.Layer<CoolDownStore, StoreUnavailable>
  readonly test: typeof it.effect
  /** Returns once the cool-down of `connectionId` (ending `ms` from now) has ended. */
  readonly expire: (store: Store, connectionId: string, ms: number) => Effect.Effect<void, StoreUnavailable>
}

const pollUntilGone = (store: Store, connectionId: string) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 5_000
    while (Option.isSome(yield* store.get(connectionId))) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`${connectionId} did not expire within 5 s`))
      yield* Effect.sleep(Duration.millis(10))
    }
  })

const backends: ReadonlyArray<Backend> = [
  {
    name: "memory",
    layer: () => CoolDownStore.layerMemory,
    test: it.effect,
    expire: (_store, _id, ms) => TestClock.adjust(Duration.millis(ms))
  },
  {
    name: "redis",
    layer: () => CoolDownStore.layerRedis({ url: redisUrl, keyPrefix: uniqueRedisPrefix() }),
    test: it.live,
    expire: pollUntilGone
  }
]

for (const backend of backends) {
  describe(`CoolDownStore conformance: ${backend.name}`, () => {
    const test = (name: string, body: (store: Store, now: number) => Effect.Effect<void, StoreUnavailable>) =>
      backend.test(name, () =>
        Effect.gen(function* () {
          const store = yield* CoolDownStore
          yield* body(store, yield* Clock.currentTimeMillis)
        }).pipe(Effect.provide(backend.layer()))
      )

    test("publish then get returns the end; connections are independent", (store, now) =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* store.get("cxn_a"), Option.none())
        yield* store.publish("cxn_a", now + 60_000)
        yield* store.publish("cxn_b", now + 30_000)
        assert.deepStrictEqual(yield* store.get("cxn_a"), Option.some(now + 60_000))
        assert.deepStrictEqual(yield* store.get("cxn_b"), Option.some(now + 30_000))
        assert.deepStrictEqual(yield* store.get("cxn_c"), Option.none())
      }))

    test("a later publish replaces the end, earlier or later", (store, now) =>
      Effect.gen(function* () {
        yield* store.publish("cxn_a", now + 60_000)
        yield* store.publish("cxn_a", now + 90_000)
        assert.deepStrictEqual(yield* store.get("cxn_a"), Option.some(now + 90_000))
        yield* store.publish("cxn_a", now + 10_000)
        assert.deepStrictEqual(yield* store.get("cxn_a"), Option.some(now + 10_000))
      }))

    test("clear removes the cool-down; clearing nothing is fine", (store, now) =>
      Effect.gen(function* () {
        yield* store.clear("cxn_a")
        yield* store.publish("cxn_a", now + 60_000)
        yield* store.publish("cxn_b", now + 60_000)
        yield* store.clear("cxn_a")
        assert.deepStrictEqual(yield* store.get("cxn_a"), Option.none())
        assert.deepStrictEqual(yield* store.get("cxn_b"), Option.some(now + 60_000))
      }))

    test("publishing an end already past clears", (store, now) =>
      Effect.gen(function* () {
        yield* store.publish("cxn_a", now + 60_000)
        yield* store.publish("cxn_a", now - 1)
        assert.deepStrictEqual(yield* store.get("cxn_a"), Option.none())
      }))

    test("the entry is gone once the end has passed", (store, now) =>
      Effect.gen(function* () {
        yield* store.publish("cxn_short", now + 150)
        yield* store.publish("cxn_long", now + 60_000)
        yield* backend.expire(store, "cxn_short", 150)
        assert.deepStrictEqual(yield* store.get("cxn_short"), Option.none())
        assert.deepStrictEqual(yield* store.get("cxn_long"), Option.some(now + 60_000))
      }))
  })
}

describe("CoolDownStore.layerMemory", () => {
  it.effect("ends exactly at the published end on the Clock", () =>
    Effect.gen(function* () {
      const store = yield* CoolDownStore
      const now = yield* Clock.currentTimeMillis
      yield* store.publish("cxn_a", now + 1000)
      yield* TestClock.adjust(Duration.millis(999))
      assert.deepStrictEqual(yield* store.get("cxn_a"), Option.some(now + 1000))
      yield* TestClock.adjust(Duration.millis(1))
      assert.deepStrictEqual(yield* store.get("cxn_a"), Option.none())
    }).pipe(Effect.provide(CoolDownStore.layerMemory))
  )
})

describe("CoolDownStore.layerRedis", () => {
  it.live("one key per connection under keyPrefix, expiring with PX at the end", () =>
    Effect.gen(function* () {
      const prefix = uniqueRedisPrefix()
      const raw = yield* Effect.acquireRelease(
        Effect.sync(() => new Redis(redisUrl)),
        (client) => Effect.promise(() => client.quit())
      )
      const now = Date.now()
      yield* Effect.gen(function* () {
        const store = yield* CoolDownStore
        yield* store.publish("cxn_a", now + 60_000)
      }).pipe(Effect.provide(CoolDownStore.layerRedis({ url: redisUrl, keyPrefix: prefix })))
      const key = `${prefix}${coolDownKey("cxn_a")}`
      assert.strictEqual(key, `${prefix}cool-down:{rl}:cxn_a`)
      assert.strictEqual(yield* Effect.promise(() => raw.get(key)), String(now + 60_000))
      const ttl = yield* Effect.promise(() => raw.pttl(key))
      assert.isTrue(ttl > 50_000 && ttl <= 60_000, `pttl ${ttl}`)
      yield* Effect.promise(() => raw.del(key))
    })
  )
})
