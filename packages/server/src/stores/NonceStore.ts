import { createHash } from "node:crypto"
import { Clock, Context, Effect, Layer } from "effect"
import { Telemetry } from "../telemetry/Telemetry.ts"
import { CounterStore, type StoreUnavailable } from "./CounterStore.ts"

/** Seconds a claim outlives the token's `exp`: the verifier's clock tolerance. */
export const nonceLeewaySeconds = 60

/** The counter-store key of a nonce: only its SHA-256 is stored. */
export const nonceKey = (nonce: string): string => `nonce:${createHash("sha256").update(nonce, "utf8").digest("hex")}`

/** What a nonce span names instead of its key: the key derives from the nonce, so only its prefix. */
export const nonceKeyPattern = "nonce:*"

/**
 * Single-use token nonces shared by every process (spec 5, SECURITY.md): `claim` is true exactly
 * once per nonce until `exp + 60 s`, by which time a replay fails the expiry check instead.
 */
export class NonceStore extends Context.Service<
  NonceStore,
  {
    claim(nonce: string, expiresAtEpochSeconds: number): Effect.Effect<boolean, StoreUnavailable>
  }
>()("@svc/server/stores/NonceStore") {
  /** NonceStore over whichever CounterStore is provided. */
  static readonly layerNoDeps: Layer.Layer<NonceStore, never, CounterStore> = Layer.effect(
    NonceStore,
    Effect.gen(function* () {
      const store = yield* CounterStore
      // Telemetry (spec 8.3): a counter-store span on Redis with the key's prefix only; none when off.
      const traced = store.backend === "redis" && (yield* Telemetry).tracing
      return NonceStore.of({
        claim: Effect.fnUntraced(function* (nonce: string, expiresAtEpochSeconds: number) {
          const now = yield* Clock.currentTimeMillis
          const ttl = (expiresAtEpochSeconds + nonceLeewaySeconds) * 1000 - now
          const bounded = Math.min(Number.MAX_SAFE_INTEGER, Math.max(1000, ttl))
          const call = store.setIfAbsent(nonceKey(nonce), "1", bounded)
          return yield* traced
            ? Effect.withSpan(call, "counter_store.nonce_claim", {
                kind: "client",
                attributes: {
                  "db.system.name": "redis",
                  "db.operation.name": "SET",
                  "svc.counter_store.keys": nonceKeyPattern
                }
              })
            : call
        })
      })
    })
  )

  /** NonceStore over an in-memory CounterStore (embedded default, unit tests). */
  static readonly layerMemory: Layer.Layer<NonceStore> = NonceStore.layerNoDeps.pipe(
    Layer.provide(CounterStore.layerMemory)
  )
}
