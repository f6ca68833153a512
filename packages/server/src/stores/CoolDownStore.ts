import { Clock, Context, Effect, Layer, Option } from "effect"
import { Telemetry } from "../telemetry/Telemetry.ts"
import { coolDownChannel, coolDownMessage } from "./CoolDownFeed.ts"
import {
  clientCall,
  connectRedis,
  type RedisCounterStoreOptions,
  releaseRedis,
  type StoreUnavailable
} from "./RedisClient.ts"

/** Options of {@link CoolDownStore.layerRedis}: the counter store's Redis settings. */
export type RedisCoolDownStoreOptions = RedisCounterStoreOptions

/**
 * The hash tag of every key one rate-limit check touches (cool-downs and rule buckets): a rule's
 * bucket is shared by many connections, so a single tag is the only one that keeps each check's
 * one script call on one Redis Cluster slot (spec 4.6 rule 7: one logical counter store).
 */
export const rateLimitHashTag = "{rl}"

/** The Redis key of a connection's cool-down end, under the configured key prefix and the rate-limit hash tag. */
export const coolDownKey = (connectionId: string): string => `cool-down:${rateLimitHashTag}:${connectionId}`

type Operation = "coolDown.publish" | "coolDown.clear" | "coolDown.get"

/** The exported span (spec 8.3 key-value store spans) and Redis command of each Redis operation. */
const spanNames: Record<Operation, string> = {
  "coolDown.publish": "counter_store.cool_down_publish",
  "coolDown.clear": "counter_store.cool_down_clear",
  "coolDown.get": "counter_store.cool_down_get"
}
const commands: Record<Operation, string> = {
  "coolDown.publish": "SET",
  "coolDown.clear": "DEL",
  "coolDown.get": "GET"
}

/**
 * Published cool-down ends of connections (spec 2.9; ARCHITECTURE "The Connection entity"): the
 * `Connection` entity writes, every proxy process reads without calling the entity. An entry is
 * gone once its end has passed (`now >= until`) on both layers; failures are `StoreUnavailable`.
 */
export class CoolDownStore extends Context.Service<
  CoolDownStore,
  {
    /** Records that `connectionId` cools down until `untilEpochMs`; an end already past clears it. */
    publish(connectionId: string, untilEpochMs: number): Effect.Effect<void, StoreUnavailable>
    /** Removes the connection's cool-down, if any. */
    clear(connectionId: string): Effect.Effect<void, StoreUnavailable>
    /** The end of the connection's current cool-down (epoch ms), none when it is not cooling down. */
    get(connectionId: string): Effect.Effect<Option.Option<number>, StoreUnavailable>
  }
>()("@svc/server/stores/CoolDownStore") {
  /** In-process map (the embedded default); expiry follows `Clock`, so `TestClock` drives it. */
  static readonly layerMemory: Layer.Layer<CoolDownStore> = Layer.sync(CoolDownStore, () => {
    const ends = new Map<string, number>()
    return CoolDownStore.of({
      publish: (connectionId, untilEpochMs) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          if (untilEpochMs > now) ends.set(connectionId, untilEpochMs)
          else ends.delete(connectionId)
        }),
      clear: (connectionId) =>
        Effect.sync(() => {
          ends.delete(connectionId)
        }),
      get: (connectionId) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          const until = ends.get(connectionId)
          if (until === undefined) return Option.none()
          if (until <= now) {
            ends.delete(connectionId)
            return Option.none()
          }
          return Option.some(until)
        })
    })
  })

  /**
   * One Redis key per connection holding the end in epoch ms, set with `PX` so Redis drops it
   * when the cool-down ends, each change also published on the cool-down channel; scoped like `CounterStore.layerRedis` (fails fast, quits on release).
   */
  static readonly layerRedis = (options: RedisCoolDownStoreOptions): Layer.Layer<CoolDownStore, StoreUnavailable> =>
    Layer.effect(
      CoolDownStore,
      Effect.gen(function* () {
        const context = yield* Effect.context<never>()
        const client = yield* Effect.acquireRelease(
          connectRedis({ connectionName: "svc-cool-down-store", ...options }, context),
          releaseRedis
        )

        // Telemetry (spec 8.3): a counter-store span per command with the key name, never a value; none when off.
        const traced = (yield* Telemetry).tracing
        const call = clientCall(client, options)
        const attempt = <A>(operation: Operation, key: string, run: () => Promise<A>) => {
          const result = call(operation, run)
          return traced
            ? Effect.withSpan(result, spanNames[operation], {
                kind: "client",
                attributes: {
                  "db.system.name": "redis",
                  "db.operation.name": commands[operation],
                  "svc.counter_store.keys": key
                }
              })
            : result
        }

        // Each change is also announced on the cool-down channel (`CoolDownFeed.ts`), after the
        // write has been acknowledged (on a cluster the two may go to different nodes), so a process
        // that hears it reads the same from the key.
        const channel = coolDownChannel(options.keyPrefix)
        const clear = (connectionId: string) => {
          const key = coolDownKey(connectionId)
          return Effect.asVoid(
            attempt("coolDown.clear", key, () =>
              client.del(key).then(() => client.publish(channel, coolDownMessage(connectionId, 0)))
            )
          )
        }

        return CoolDownStore.of({
          publish: (connectionId, untilEpochMs) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) => {
              const ttl = Math.ceil(untilEpochMs - now)
              if (ttl <= 0) return clear(connectionId)
              const key = coolDownKey(connectionId)
              return Effect.asVoid(
                attempt("coolDown.publish", key, () =>
                  client
                    .set(key, String(Math.ceil(untilEpochMs)), "PX", ttl)
                    .then(() => client.publish(channel, coolDownMessage(connectionId, ttl)))
                )
              )
            }),
          clear,
          get: (connectionId) => {
            const key = coolDownKey(connectionId)
            return attempt("coolDown.get", key, () => client.get(key)).pipe(
              Effect.flatMap((value) => {
                if (value === null) return Effect.succeedNone
                const until = Number(value)
                return Number.isSafeInteger(until)
                  ? Effect.succeedSome(until)
                  : Effect.die(new Error(`malformed cool-down entry for ${connectionId}`))
              })
            )
          }
        })
      })
    )
}
