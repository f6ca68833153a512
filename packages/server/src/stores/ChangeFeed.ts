/**
 * Connection changes between processes (docs/cluster.md "Cache invalidation across processes"):
 * a write publishes the ids it changed on a Redis channel (a single node or a Redis Cluster,
 * where a classic `PUBLISH` reaches every node) and every process drops its cached entries of
 * them. `publish` resolves once Redis accepted the message, which is then already queued to every
 * subscribed process; it never fails (a failure is logged and the caches' short TTL bounds the
 * staleness). A subscription that drops or is re-established reports `lost` (its listeners forget
 * everything: notices may have been missed), and while it is down `live` is false, so the caches
 * keep entries only `unsubscribedTtl`. The embedded default (one process is everything) needs no
 * feed: writers and caches share the in-process `ConnectionChanges`.
 */
import { randomBytes } from "node:crypto"
import { Context, Duration, Effect, Layer } from "effect"
import {
  clientCall,
  connectRedis,
  type RedisCounterStoreOptions,
  releaseRedis,
  type StoreUnavailable
} from "./RedisClient.ts"
import { keepSubscribed, warnAtMostOnceAMinute } from "./RedisSubscription.ts"

/** What a process does with other processes' notices. */
export interface ChangeListener {
  /** Connections `ids` were written elsewhere. */
  readonly changed: (ids: ReadonlyArray<string>) => void
  /** Notices may have been lost (the subscription dropped or was re-established): forget everything. */
  readonly lost: () => void
}

/** How long a cache keeps an entry while the subscription is down (Redis unreachable). */
export const unsubscribedTtl = Duration.seconds(1)

/** Ids per published message. */
const chunk = 500

/** The channel of a deployment (channels do not take the key prefix by themselves). */
export const changeChannel = (keyPrefix: string): string => `${keyPrefix}connection-changes`

/** Cross-process notices of connection writes. */
export class ChangeFeed extends Context.Service<
  ChangeFeed,
  {
    /** Tells every other process that connections `ids` were written; resolves when Redis took it. Never fails. */
    readonly publish: (ids: ReadonlyArray<string>) => Effect.Effect<void>
    /** Registers the listener of other processes' notices, for the life of the process. */
    readonly listen: (listener: ChangeListener) => void
    /** Whether notices currently arrive (always, for the in-process feed). */
    readonly live: () => boolean
  }
>()("@svc/server/stores/ChangeFeed") {
  /** One process is everything (the embedded default, or an in-memory counter store): nothing to send. */
  static readonly layerLocal: Layer.Layer<ChangeFeed> = Layer.succeed(ChangeFeed, {
    publish: () => Effect.void,
    listen: () => {},
    live: () => true
  })

  /**
   * On the counter store's Redis: a publishing connection, and a subscribing connection kept up by
   * a background fiber (on a cluster, to one seed node after another). Fails at start like the
   * counter store when Redis cannot be reached.
   */
  static readonly layerRedis = (options: RedisCounterStoreOptions): Layer.Layer<ChangeFeed, StoreUnavailable> =>
    Layer.effect(
      ChangeFeed,
      Effect.gen(function* () {
        const context = yield* Effect.context<never>()
        const channel = changeChannel(options.keyPrefix)
        const origin = randomBytes(8).toString("hex")
        const publisher = yield* Effect.acquireRelease(
          connectRedis({ ...options, connectionName: "svc-change-feed" }, context),
          releaseRedis
        )
        const attempt = clientCall(publisher, options)
        const listeners: Array<ChangeListener> = []

        const warn = warnAtMostOnceAMinute()

        const lost = () => {
          for (const listener of listeners) listener.lost()
        }

        const received = (message: string) => {
          const parts = message.split(" ")
          if (parts[0] === origin) return
          const ids = parts.slice(1)
          for (const listener of listeners) listener.changed(ids)
        }

        const publish = (ids: ReadonlyArray<string>): Effect.Effect<void> =>
          Effect.forEach(
            Array.from({ length: Math.ceil(ids.length / chunk) }, (_, i) => ids.slice(i * chunk, (i + 1) * chunk)),
            (part) => attempt("changeFeed.publish", () => publisher.publish(channel, `${origin} ${part.join(" ")}`)),
            { discard: true }
          ).pipe(
            Effect.catch((error) =>
              warn(
                `connection changes could not be published (${error.reason ?? error.operation}); other processes see them within ${Duration.format(unsubscribedTtl)} once the subscription notices, else within their cache TTL`
              )
            )
          )

        const live = yield* keepSubscribed(
          options,
          channel,
          { connectionName: "svc-change-feed-sub", operation: "changeFeed", what: "connection-change" },
          { message: received, lost }
        )

        return ChangeFeed.of({
          publish: (ids) => (ids.length === 0 ? Effect.void : publish(ids)),
          listen: (listener) => {
            listeners.push(listener)
          },
          live
        })
      })
    )
}
