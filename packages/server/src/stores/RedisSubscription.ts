/**
 * One Redis pub/sub channel kept subscribed by a background fiber (a single node, or on a Redis
 * Cluster one seed node after another: a classic `PUBLISH` reaches the subscribers of every node).
 * A subscription is up until its connection ends or a `PING` (every second) fails; while it is
 * down, `live` is false. Each time it is (re-)established, and each time it drops, `lost` is
 * called: messages may have been missed. Shared by the connection-change feed (`ChangeFeed.ts`)
 * and the published cool-downs (`CoolDownFeed.ts`).
 */
import { Clock, type Context, Duration, Effect, Redacted, Schedule, type Scope } from "effect"
import type { Redis } from "ioredis"
import { clientCall, connectRedis, type RedisCounterStoreOptions, releaseRedis } from "./RedisClient.ts"

/** How often the subscription is checked with `PING` (a silently dead connection is noticed). */
const pingEvery = Duration.seconds(1)

/** A warning logger that logs at most one line a minute (a Redis outage is not a log flood). */
export const warnAtMostOnceAMinute = () => {
  let warnedAt = Number.NEGATIVE_INFINITY
  return (message: string): Effect.Effect<void> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (now - warnedAt < 60_000) return Effect.void
      warnedAt = now
      return Effect.logWarning(message)
    })
}

/** What a subscription does with what arrives. */
export interface SubscriptionHandlers {
  readonly message: (message: string) => void
  /** Messages may have been missed (the subscription was established, or dropped). */
  readonly lost: () => void
}

/**
 * Keeps `channel` subscribed for the life of the scope and
 * answers whether it currently is. Failures are warned of at most once a minute.
 */
export const keepSubscribed = (
  options: RedisCounterStoreOptions,
  channel: string,
  names: {
    /** `CLIENT SETNAME` of the subscribing connection. */
    readonly connectionName: string
    /** The operation named in a failure (`<operation>.subscribe`, `<operation>.ping`). */
    readonly operation: string
    /** What the subscription is, in a warning. */
    readonly what: string
  },
  handlers: SubscriptionHandlers
): Effect.Effect<() => boolean, never, Scope.Scope> =>
  Effect.gen(function* () {
    const context: Context.Context<never> = yield* Effect.context<never>()
    let live = false

    const warn = warnAtMostOnceAMinute()

    const received = (from: string, message: string) => {
      if (from === channel) handlers.message(message)
    }

    // The nodes the subscriber tries in turn: the URL's, or each seed of a cluster.
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
          { ...single, url: Redacted.make(target), connectionName: names.connectionName, reconnect: false },
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
      yield* call(`${names.operation}.subscribe`, () => client.subscribe(channel))
      live = true
      // Anything published before this subscription was missed.
      handlers.lost()
      const pings = Effect.forever(
        Effect.andThen(
          Effect.sleep(pingEvery),
          call(`${names.operation}.ping`, () => client.ping())
        )
      )
      yield* Effect.raceFirst(ended, Effect.ignore(pings))
    }).pipe(Effect.scoped)

    const subscriber = subscribeOnce.pipe(
      Effect.catch((error) => warn(`the ${names.what} subscription failed (${error.reason ?? error.operation})`)),
      Effect.andThen(
        Effect.sync(() => {
          if (live) {
            live = false
            handlers.lost()
          }
        })
      ),
      Effect.repeat(Schedule.spaced(Duration.millis(250)))
    )
    yield* Effect.forkScoped(subscriber)
    return () => live
  })
