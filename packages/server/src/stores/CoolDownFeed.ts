/**
 * Published cool-downs pushed to every process (spec 2.9; docs/rate-limits.md "Cool-downs across
 * processes"): the Redis cool-down store publishes each change of a connection's cool-down on a
 * channel as it writes it, and each proxy process keeps what it heard, or what its last check read
 * from the store, for a short time (`knownCoolDownTtlMs`). A request that matches no rate-limit
 * rule then needs no counter-store round trip while its connection's state is known; with a rule
 * matched, the cool-down still rides in the rule's one round trip (the rate-limit script).
 *
 * Correct across processes: a message is applied as it arrives, whatever the process knew; an
 * answer of the store is kept only if no message arrived between the check's start and its
 * answer (it could predate the change the message announced); while the subscription is down
 * (and at each re-subscription, when messages may have been missed) nothing is known, so every
 * check reads the store as before. The short TTL bounds what a silently lost message could hide.
 */
import { Effect, type Scope } from "effect"
import type { RedisCounterStoreOptions } from "./RedisClient.ts"
import { keepSubscribed } from "./RedisSubscription.ts"

/** How long a connection's cool-down state, heard or read, is used without asking the store again. */
export const knownCoolDownTtlMs = 1000

/** The channel of a deployment's cool-down changes (channels do not take the key prefix by themselves). */
export const coolDownChannel = (keyPrefix: string): string => `${keyPrefix}cool-downs`

/** The message announcing that `connectionId` cools down for `leftMs` more (0: its cool-down is over). */
export const coolDownMessage = (connectionId: string, leftMs: number): string =>
  `${connectionId} ${Math.max(0, Math.ceil(leftMs))}`

/** Entries are swept every this many lookups. */
const sweepEvery = 4096

interface Known {
  /** The cool-down's end on this process's clock (epoch ms); 0: none. */
  readonly until: number
  /** Until when this entry is used (epoch ms). */
  readonly fresh: number
}

/** What this process knows of connections' published cool-downs; all times on `Date.now()`. */
export class KnownCoolDowns {
  private readonly entries = new Map<string, Known>()
  /** Counts messages and subscription changes: a store answer from before one is not kept. */
  private generation = 0
  private lookups = 0
  private readonly live: () => boolean
  private readonly ttlMs: number

  constructor(live: () => boolean, ttlMs: number = knownCoolDownTtlMs) {
    this.live = live
    this.ttlMs = ttlMs
  }

  /** Whether messages currently arrive (the subscription is up). */
  isLive(): boolean {
    return this.live()
  }

  /** The connection's cool-down end (0: none) when known and fresh; undefined: ask the store. */
  known(connectionId: string, now: number): number | undefined {
    if (++this.lookups >= sweepEvery) this.sweep(now)
    if (!this.live()) return undefined
    const entry = this.entries.get(connectionId)
    return entry === undefined || entry.fresh <= now ? undefined : entry.until
  }

  /** Taken before a check goes to the store; handed back to `read`. */
  mark(): number {
    return this.generation
  }

  /** The store answered a check begun at `mark`: the connection cools down until `until` (0: not). */
  read(mark: number, connectionId: string, until: number, now: number): void {
    if (mark !== this.generation || !this.live()) return
    this.entries.set(connectionId, { until, fresh: now + this.ttlMs })
  }

  /** A message of the channel (`coolDownMessage`). */
  heard(message: string, now: number): void {
    this.generation++
    const space = message.indexOf(" ")
    const left = Number(message.slice(space + 1))
    if (space <= 0 || !Number.isFinite(left)) return
    this.entries.set(message.slice(0, space), { until: left > 0 ? now + left : 0, fresh: now + this.ttlMs })
  }

  /** The subscription was (re-)established or dropped: messages may have been missed. */
  lost(): void {
    this.generation++
    this.entries.clear()
  }

  private sweep(now: number) {
    this.lookups = 0
    for (const [id, entry] of this.entries) if (entry.fresh <= now) this.entries.delete(id)
  }
}

/** `KnownCoolDowns` fed by the deployment's cool-down channel, subscribed for the life of the scope. */
export const subscribeCoolDowns = (
  options: RedisCounterStoreOptions,
  ttlMs: number = knownCoolDownTtlMs
): Effect.Effect<KnownCoolDowns, never, Scope.Scope> =>
  Effect.gen(function* () {
    let live = () => false
    const known = new KnownCoolDowns(() => live(), ttlMs)
    live = yield* keepSubscribed(
      options,
      coolDownChannel(options.keyPrefix),
      { connectionName: "svc-cool-down-feed", operation: "coolDownFeed", what: "cool-down" },
      { message: (message) => known.heard(message, Date.now()), lost: () => known.lost() }
    )
    return known
  })
