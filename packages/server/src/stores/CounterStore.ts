import { Clock, Context, Effect, Layer, Option } from "effect"
import {
  clientCall,
  connectRedis,
  pingClient,
  type RedisCounterStoreOptions,
  releaseRedis,
  type StoreUnavailable
} from "./RedisClient.ts"

export {
  clientCall,
  connectRedis,
  describeRedisError,
  type RedisClient,
  type RedisCounterStoreOptions,
  type RedisNode,
  type RedisTlsFiles,
  releaseRedis,
  StoreUnavailable
} from "./RedisClient.ts"

/** The TTL a store receives: a whole number of milliseconds, at least 1. */
const normalizeTtl = (ttlMillis: number): Effect.Effect<number> =>
  Number.isFinite(ttlMillis)
    ? Effect.succeed(Math.max(1, Math.ceil(ttlMillis)))
    : Effect.die(new RangeError(`CounterStore TTL must be finite, got ${ttlMillis}`))

const sweepEvery = 1024

/**
 * Shared counter/state store (Redis in production, in-memory for the embedded default) with the
 * same semantics on both: `setIfAbsent` is an atomic SET NX PX; an entry is gone once its TTL
 * has elapsed (`now >= setAt + ttl`); failures are `StoreUnavailable`, never silent.
 */
export class CounterStore extends Context.Service<
  CounterStore,
  {
    /** Where the entries live: `redis` is the network store whose calls get spans (spec 8.3); absent, in process. */
    readonly backend?: "memory" | "redis" | undefined
    /** Stores `value` under `key` for `ttlMillis` unless a live entry exists; true if it stored. */
    setIfAbsent(key: string, value: string, ttlMillis: number): Effect.Effect<boolean, StoreUnavailable>
    get(key: string): Effect.Effect<Option.Option<string>, StoreUnavailable>
    /** Removes `key`; true if a live entry was removed. */
    delete(key: string): Effect.Effect<boolean, StoreUnavailable>
    /** Succeeds when the store answers (healthz). */
    ping(): Effect.Effect<void, StoreUnavailable>
  }
>()("@svc/server/stores/CounterStore") {
  /** In-process store; expiry follows `Clock`, so `TestClock` drives it. */
  static readonly layerMemory: Layer.Layer<CounterStore> = Layer.sync(CounterStore, () => {
    const entries = new Map<string, { readonly value: string; readonly expiresAt: number }>()
    let writes = 0

    const live = (key: string, now: number) => {
      const entry = entries.get(key)
      if (entry === undefined) return undefined
      if (entry.expiresAt <= now) {
        entries.delete(key)
        return undefined
      }
      return entry
    }

    const sweep = (now: number) => {
      if (++writes < sweepEvery) return
      writes = 0
      for (const [key, entry] of entries) if (entry.expiresAt <= now) entries.delete(key)
    }

    return CounterStore.of({
      backend: "memory",
      setIfAbsent: (key, value, ttlMillis) =>
        Effect.flatMap(normalizeTtl(ttlMillis), (ttl) =>
          Effect.map(Clock.currentTimeMillis, (now) => {
            if (live(key, now) !== undefined) return false
            sweep(now)
            entries.set(key, { value, expiresAt: now + ttl })
            return true
          })
        ),
      get: (key) => Effect.map(Clock.currentTimeMillis, (now) => Option.fromUndefinedOr(live(key, now)?.value)),
      delete: (key) =>
        Effect.map(Clock.currentTimeMillis, (now) => live(key, now) !== undefined && entries.delete(key)),
      ping: () => Effect.void
    })
  })

  /**
   * Redis or Redis Cluster through ioredis, scoped: connects at build (fails with
   * `StoreUnavailable` within the connect timeout) and quits on release. `enableOfflineQueue:
   * false` and `maxRetriesPerRequest: 0`: while Redis is unreachable commands fail at once instead
   * of queueing in memory, so rate limiting fails open and nonce checks answer 503 promptly;
   * ioredis keeps reconnecting in the background. Every command is single-key, so each works on
   * any cluster slot.
   */
  static readonly layerRedis = (options: RedisCounterStoreOptions): Layer.Layer<CounterStore, StoreUnavailable> =>
    Layer.effect(
      CounterStore,
      Effect.gen(function* () {
        const context = yield* Effect.context<never>()
        const client = yield* Effect.acquireRelease(connectRedis(options, context), releaseRedis)
        const attempt = clientCall(client, options)

        return CounterStore.of({
          backend: "redis",
          setIfAbsent: (key, value, ttlMillis) =>
            Effect.flatMap(normalizeTtl(ttlMillis), (ttl) =>
              attempt("setIfAbsent", () => client.set(key, value, "PX", ttl, "NX")).pipe(
                Effect.map((reply) => reply === "OK")
              )
            ),
          get: (key) => attempt("get", () => client.get(key)).pipe(Effect.map(Option.fromNullishOr)),
          delete: (key) => attempt("delete", () => client.del(key)).pipe(Effect.map((removed) => removed > 0)),
          ping: () => attempt("ping", () => pingClient(client))
        })
      })
    )
}
