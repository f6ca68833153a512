import { Clock, Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { Redis } from "ioredis"

/** The counter store could not be reached or did not answer in time; callers pick fail-open or 503. */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()("StoreUnavailable", {
  operation: Schema.String,
  cause: Schema.Defect()
}) {
  override get message(): string {
    return `the counter store is unavailable (${this.operation})`
  }
}

/** Options of {@link CounterStore.layerRedis}. */
export interface RedisCounterStoreOptions {
  readonly url: string | Redacted.Redacted<string>
  /** Prepended to every key (e.g. `svc:`); isolates deployments and tests sharing one Redis. */
  readonly keyPrefix: string
  /** Bound on establishing the connection, also at layer build. Default 2000 ms. */
  readonly connectTimeoutMillis?: number | undefined
  /** Bound on each command. Default 1000 ms. */
  readonly commandTimeoutMillis?: number | undefined
  /** `CLIENT SETNAME` of the connection, for operators. Default `svc-counter-store`. */
  readonly connectionName?: string | undefined
}

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
   * Redis through ioredis, scoped: connects at build (fails with `StoreUnavailable` within the
   * connect timeout) and quits on release. `enableOfflineQueue: false` and
   * `maxRetriesPerRequest: 0`: while Redis is unreachable commands fail at once instead of
   * queueing in memory, so rate limiting fails open and nonce checks answer 503 promptly;
   * ioredis keeps reconnecting in the background.
   */
  static readonly layerRedis = (options: RedisCounterStoreOptions): Layer.Layer<CounterStore, StoreUnavailable> =>
    Layer.effect(
      CounterStore,
      Effect.gen(function* () {
        const context = yield* Effect.context<never>()
        const client = yield* Effect.acquireRelease(connectRedis(options, context), releaseRedis)

        const attempt = <A>(operation: string, run: () => Promise<A>) =>
          Effect.tryPromise({ try: run, catch: (cause) => new StoreUnavailable({ operation, cause }) })

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
          ping: () => Effect.asVoid(attempt("ping", () => client.ping()))
        })
      })
    )
}

/**
 * Closes a client: `QUIT` (at most 2 s), then the socket. Never fails: with Redis gone `QUIT`
 * rejects at once ("Stream isn't writeable"), and a shutdown must still end cleanly.
 */
export const releaseRedis = (client: Redis): Effect.Effect<void> =>
  Effect.tryPromise(() => client.quit()).pipe(
    Effect.timeout(Duration.seconds(2)),
    Effect.ignore,
    Effect.ensuring(Effect.sync(() => client.disconnect()))
  )

/** Connects an ioredis client with the store's fail-fast settings (no offline queue, no retries). */
export const connectRedis = (options: RedisCounterStoreOptions, context: Context.Context<never>) =>
  Effect.tryPromise({
    try: async () => {
      const url = Redacted.isRedacted(options.url) ? Redacted.value(options.url) : options.url
      const client = new Redis(url, {
        keyPrefix: options.keyPrefix,
        connectionName: options.connectionName ?? "svc-counter-store",
        lazyConnect: true,
        connectTimeout: options.connectTimeoutMillis ?? 2000,
        commandTimeout: options.commandTimeoutMillis ?? 1000,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        enableAutoPipelining: true
      })
      let lastError: string | undefined
      client.on("error", (error: Error) => {
        if (error.message === lastError) return
        lastError = error.message
        Effect.runForkWith(context)(Effect.logWarning("counter store connection error", error.message))
      })
      client.on("ready", () => {
        lastError = undefined
      })
      try {
        await client.connect()
      } catch (cause) {
        client.disconnect()
        throw cause
      }
      return client
    },
    catch: (cause) => new StoreUnavailable({ operation: "connect", cause })
  })
