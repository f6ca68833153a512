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
import { Clock, Context, Duration, Effect, Layer, Redacted, Schedule } from "effect"
import type { Redis } from "ioredis"
import {
  clientCall,
  connectRedis,
  type RedisCounterStoreOptions,
  releaseRedis,
  type StoreUnavailable
} from "./RedisClient.ts"

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

/** How often the subscription is checked with `PING` (a silently dead connection is noticed). */
const pingEvery = Duration.seconds(1)

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
        let live = false

        let warnedAt = Number.NEGATIVE_INFINITY
        const warn = (message: string) =>
          Effect.flatMap(Clock.currentTimeMillis, (now) => {
            if (now - warnedAt < 60_000) return Effect.void
            warnedAt = now
            return Effect.logWarning(message)
          })

        const lost = () => {
          for (const listener of listeners) listener.lost()
        }

        const received = (_channel: string, message: string) => {
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

        // The nodes the subscriber tries in turn: the URL's, or each seed of a cluster (a classic
        // PUBLISH reaches the subscribers of every node).
        const url = Redacted.isRedacted(options.url) ? Redacted.value(options.url) : options.url
        const urls =
          options.nodes === undefined || options.nodes.length === 0
            ? [url]
            : options.nodes.map((node) => {
                const parsed = new URL(url)
                parsed.hostname = node.host
                parsed.port = String(node.port)
                return parsed.toString()
              })
        let next = 0

        /** One subscription: up until its connection ends or a `PING` fails. */
        const subscribeOnce = Effect.gen(function* () {
          const target = urls[next++ % urls.length]!
          const { nodes: _nodes, ...single } = options
          const client = (yield* Effect.acquireRelease(
            connectRedis(
              { ...single, url: Redacted.make(target), connectionName: "svc-change-feed-sub", reconnect: false },
              context
            ),
            releaseRedis
          )) as Redis
          const ended = Effect.callback<void>((resume) => {
            const done = () => resume(Effect.void)
            client.once("end", done)
            client.once("close", done)
            return Effect.sync(() => {
              client.off("end", done)
              client.off("close", done)
            })
          })
          client.on("message", received)
          const call = clientCall(client, options)
          yield* call("changeFeed.subscribe", () => client.subscribe(channel))
          live = true
          // Anything published before this subscription was missed.
          lost()
          const pings = Effect.forever(
            Effect.andThen(
              Effect.sleep(pingEvery),
              call("changeFeed.ping", () => client.ping())
            )
          )
          yield* Effect.raceFirst(ended, Effect.ignore(pings))
        }).pipe(Effect.scoped)

        const subscriber = subscribeOnce.pipe(
          Effect.catch((error) =>
            warn(`the connection-change subscription failed (${error.reason ?? error.operation})`)
          ),
          Effect.andThen(
            Effect.sync(() => {
              if (live) {
                live = false
                lost()
              }
            })
          ),
          Effect.repeat(Schedule.spaced(Duration.millis(250)))
        )
        yield* Effect.forkScoped(subscriber)

        return ChangeFeed.of({
          publish: (ids) => (ids.length === 0 ? Effect.void : publish(ids)),
          listen: (listener) => {
            listeners.push(listener)
          },
          live: () => live
        })
      })
    )
}
