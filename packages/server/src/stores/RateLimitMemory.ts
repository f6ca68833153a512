/**
 * The in-memory rate-limit store's evaluation of one rule (`RateLimitStore.layerMemory`):
 * `@svc/domain/RateLimitAlgorithm` operation for operation, as the Redis script runs it.
 */
import {
  type AlgorithmParams,
  retryAfterSeconds,
  slidingCounterEstimate,
  slidingCounterWaitMs,
  slidingLogWaitMs,
  tokenBucketIdleMs,
  tokenBucketRetryAfterSeconds,
  tokenBucketTokens,
  windowIndex
} from "@svc/domain/RateLimitAlgorithm"

export type MemoryState =
  | { readonly kind: "fixed_window"; readonly index: number; readonly count: number }
  | { readonly kind: "sliding_counter"; readonly index: number; readonly current: number; readonly previous: number }
  | { readonly kind: "sliding_log"; readonly log: SlidingLog }
  | { readonly kind: "token_bucket"; readonly tokens: number; readonly at: number }

/** A rule evaluated on the state before this request; `commit` counts it (or not) and answers `remaining`. */
interface Evaluated {
  readonly allowed: boolean
  readonly retry: number
  readonly commit: (consume: boolean) => number
}

/** The memory store's evaluation: `@svc/domain/RateLimitAlgorithm`, as the Redis script runs it. */
export const evaluate = (
  params: AlgorithmParams,
  state: MemoryState | undefined,
  now: number,
  save: (state: MemoryState, ttlMs: number) => void
): Evaluated => {
  switch (params.kind) {
    case "fixed_window": {
      const { limit, windowMs } = params
      const index = windowIndex(now, windowMs)
      const count = state?.kind === "fixed_window" && state.index === index ? state.count : 0
      const allowed = count < limit
      return {
        allowed,
        retry: allowed ? 0 : retryAfterSeconds((index + 1) * windowMs - now),
        commit: (consume) => {
          if (!consume) return Math.max(0, limit - count)
          save({ kind: "fixed_window", index, count: count + 1 }, (index + 1) * windowMs - now)
          return Math.max(0, limit - count - 1)
        }
      }
    }
    case "sliding_counter": {
      const { limit, windowMs } = params
      const index = windowIndex(now, windowMs)
      const elapsed = now - index * windowMs
      const stored = state?.kind === "sliding_counter" ? state : undefined
      const current = stored?.index === index ? stored.current : 0
      const previous = stored?.index === index ? stored.previous : stored?.index === index - 1 ? stored.current : 0
      const allowed = slidingCounterEstimate(current, previous, elapsed, windowMs) < limit
      return {
        allowed,
        retry: allowed ? 0 : retryAfterSeconds(slidingCounterWaitMs(current, previous, elapsed, windowMs, limit)),
        commit: (consume) => {
          const counted = consume ? current + 1 : current
          if (consume)
            save({ kind: "sliding_counter", index, current: counted, previous }, (index + 2) * windowMs - now)
          return Math.max(0, limit - slidingCounterEstimate(counted, previous, elapsed, windowMs))
        }
      }
    }
    case "sliding_log": {
      const { limit, windowMs } = params
      // entries leave the window once now − entry >= window (dropping them is right whatever
      // this request's outcome, so it happens before the commit)
      const log = state?.kind === "sliding_log" ? state.log : new SlidingLog()
      const count = log.live(now, windowMs)
      const allowed = count < limit
      return {
        allowed,
        retry: allowed ? 0 : retryAfterSeconds(slidingLogWaitMs(log.at(count - limit), now, windowMs)),
        commit: (consume) => {
          if (consume) {
            log.add(now)
            save(state?.kind === "sliding_log" ? state : { kind: "sliding_log", log }, windowMs)
          }
          return Math.max(0, limit - (consume ? count + 1 : count))
        }
      }
    }
    case "token_bucket": {
      const { capacity, refillPerSecond } = params
      const stored = state?.kind === "token_bucket" ? state : undefined
      const tokens = tokenBucketTokens(stored, now, capacity, refillPerSecond)
      const allowed = tokens >= 1
      return {
        allowed,
        retry: allowed ? 0 : tokenBucketRetryAfterSeconds(tokens, refillPerSecond),
        commit: (consume) => {
          // a bucket without a whole token has nothing to give, also to an observe rule
          if (!consume || tokens < 1) return Math.max(0, Math.floor(tokens))
          const left = tokens - 1
          save({ kind: "token_bucket", tokens: left, at: now }, tokenBucketIdleMs(left, capacity, refillPerSecond))
          return Math.floor(left)
        }
      }
    }
  }
}

/**
 * A sliding log's counted times, ascending, in place: the live entries are `times[head…]`. Entries
 * leave from the front as the window passes and arrive at the back, so a check costs O(1)
 * amortised however large the limit (copying the window per request made a generous sliding-log
 * rule cost O(limit) per request and as much garbage).
 */
class SlidingLog {
  private times: Array<number> = []
  private head = 0

  /** Drops the entries that left the window (`now − entry >= windowMs`); answers how many remain. */
  live(now: number, windowMs: number): number {
    const times = this.times
    while (this.head < times.length && times[this.head]! <= now - windowMs) this.head++
    if (this.head > 64 && this.head * 2 > times.length) {
      this.times = times.slice(this.head)
      this.head = 0
    }
    return this.times.length - this.head
  }

  /** The `i`-th live entry, oldest first. */
  at(i: number): number {
    return this.times[this.head + i]!
  }

  /** Counts `at`, kept in order (a clock that stepped back inserts before later entries). */
  add(at: number): void {
    const times = this.times
    let i = times.length
    while (i > this.head && times[i - 1]! > at) i--
    if (i === times.length) times.push(at)
    else times.splice(i, 0, at)
  }
}
