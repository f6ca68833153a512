import { randomUUID } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { Redis } from "ioredis"
import { CounterStore } from "./CounterStore.ts"
import { NonceStore, nonceKey } from "./NonceStore.ts"

const t0 = 1_750_000_000_000
const memory = NonceStore.layerNoDeps.pipe(Layer.provideMerge(CounterStore.layerMemory))

describe("NonceStore", () => {
  it("keys a nonce by its SHA-256", () => {
    assert.strictEqual(nonceKey("abc"), "nonce:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
  })

  it.effect("a nonce is claimed once; other nonces are independent", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(t0)
      const nonces = yield* NonceStore
      const exp = t0 / 1000 + 300
      assert.isTrue(yield* nonces.claim("n-1", exp))
      assert.isFalse(yield* nonces.claim("n-1", exp))
      assert.isFalse(yield* nonces.claim("n-1", exp + 1000))
      assert.isTrue(yield* nonces.claim("n-2", exp))
      const store = yield* CounterStore
      assert.deepStrictEqual(yield* store.get(nonceKey("n-1")), Option.some("1"))
      assert.deepStrictEqual(yield* store.get("nonce:n-1"), Option.none())
    }).pipe(Effect.provide(memory))
  )

  it.effect("a claim lasts until exp + 60 s", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(t0)
      const nonces = yield* NonceStore
      const exp = t0 / 1000 + 100
      assert.isTrue(yield* nonces.claim("n", exp))
      yield* TestClock.adjust(Duration.millis(160_000 - 1))
      assert.isFalse(yield* nonces.claim("n", exp))
      yield* TestClock.adjust(Duration.millis(1))
      assert.isTrue(yield* nonces.claim("n", exp))
    }).pipe(Effect.provide(memory))
  )

  it.effect("a claim for an already-past exp still lasts at least one second", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(t0)
      const nonces = yield* NonceStore
      assert.isTrue(yield* nonces.claim("old", t0 / 1000 - 3600))
      yield* TestClock.adjust(Duration.millis(999))
      assert.isFalse(yield* nonces.claim("old", t0 / 1000 - 3600))
    }).pipe(Effect.provide(memory))
  )

  it.live("claims through Redis with the TTL set to exp + 60 s", () =>
    Effect.gen(function* () {
      const prefix = `svc-test:${randomUUID()}:`
      const raw = yield* Effect.acquireRelease(
        Effect.sync(() => new Redis("redis://127.0.0.1:6379")),
        (client) => Effect.promise(() => client.quit())
      )
      const exp = Math.floor(Date.now() / 1000) + 120
      yield* Effect.gen(function* () {
        const nonces = yield* NonceStore
        assert.isTrue(yield* nonces.claim("redis-nonce", exp))
        assert.isFalse(yield* nonces.claim("redis-nonce", exp))
      }).pipe(
        Effect.provide(
          NonceStore.layerNoDeps.pipe(
            Layer.provide(CounterStore.layerRedis({ url: "redis://127.0.0.1:6379", keyPrefix: prefix }))
          )
        )
      )
      const key = `${prefix}${nonceKey("redis-nonce")}`
      const ttl = yield* Effect.promise(() => raw.pttl(key))
      const expected = (exp + 60) * 1000 - Date.now()
      assert.isTrue(ttl > expected - 5_000 && ttl <= expected + 1_000, `pttl ${ttl}, expected about ${expected}`)
      yield* Effect.promise(() => raw.del(key))
    })
  )
})
