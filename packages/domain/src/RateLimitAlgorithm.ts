/**
 * Arithmetic of the rate-limit algorithms (spec 2.8) and their `Retry-After` (spec 7). Pure and on
 * integer epoch milliseconds: the in-memory store runs these functions and the Redis script mirrors
 * them operation for operation (same IEEE doubles, same order), so both stores answer alike.
 */
import { parseDuration } from "./Duration.ts"
import type { Algorithm } from "./RateLimitDefinition.ts"

/** An algorithm with its durations in milliseconds and the sliding-window modes told apart. */
export type AlgorithmParams =
  | { readonly kind: "fixed_window"; readonly windowMs: number; readonly limit: number }
  | { readonly kind: "sliding_log"; readonly windowMs: number; readonly limit: number }
  | { readonly kind: "sliding_counter"; readonly windowMs: number; readonly limit: number }
  | { readonly kind: "token_bucket"; readonly capacity: number; readonly refillPerSecond: number }

const windowMillis = (text: string): number => {
  const ms = parseDuration(text)
  if (ms === undefined || ms <= 0) throw new RangeError(`rate-limit window is not a positive duration: ${text}`)
  return ms
}

/** The parameters of a decoded algorithm; throws on a window that decoding would have refused. */
export const algorithmParams = (algorithm: Algorithm): AlgorithmParams => {
  if ("fixed_window" in algorithm) {
    const { limit, window } = algorithm.fixed_window
    return { kind: "fixed_window", windowMs: windowMillis(window), limit }
  }
  if ("sliding_window" in algorithm) {
    const { limit, mode, window } = algorithm.sliding_window
    return { kind: mode === "log" ? "sliding_log" : "sliding_counter", windowMs: windowMillis(window), limit }
  }
  const { capacity, refill_rate } = algorithm.token_bucket
  return { kind: "token_bucket", capacity, refillPerSecond: refill_rate }
}

/** spec 7: `Retry-After` is whole seconds, rounded up, at least 1. */
export const retryAfterSeconds = (waitMs: number): number => Math.max(1, Math.ceil(waitMs / 1000))

/** spec 2.8: the fixed window holding `now` is number floor(now / window). */
export const windowIndex = (now: number, windowMs: number): number => Math.floor(now / windowMs)

/** Milliseconds from `now` to the end of its fixed window (the next boundary). */
export const windowRemainderMs = (now: number, windowMs: number): number =>
  (windowIndex(now, windowMs) + 1) * windowMs - now

/** spec 2.8 sliding counter: current + floor(previous × (window − elapsed) / window). */
export const slidingCounterEstimate = (current: number, previous: number, elapsedMs: number, windowMs: number) =>
  current + Math.floor((previous * (windowMs - elapsedMs)) / windowMs)

/**
 * Milliseconds until a sliding counter whose estimate is at least `limit` admits again, with no
 * request counted meanwhile: within this window once the weighted previous count has decayed
 * enough, else in the next one, where this window's count becomes the previous.
 */
export const slidingCounterWaitMs = (
  current: number,
  previous: number,
  elapsedMs: number,
  windowMs: number,
  limit: number
): number => {
  // estimate < limit <=> weight × (window − e') < need × window <=> e' >= window − ceil(need × window / weight) + 1
  const [need, weight, offset] = current < limit ? [limit - current, previous, 0] : [limit, current, windowMs]
  return offset + windowMs - Math.ceil((need * windowMs) / weight) + 1 - elapsedMs
}

/**
 * Milliseconds until a sliding log holding `count >= limit` entries admits again: the entry at
 * ascending position `count − limit` (its time `blocking`) must leave the window.
 */
export const slidingLogWaitMs = (blocking: number, now: number, windowMs: number): number => blocking + windowMs - now

/** A token bucket as stored: its tokens at `at` (epoch ms). */
export interface TokenBucketState {
  readonly tokens: number
  readonly at: number
}

/** spec 2.8: tokens at `now`, refilled at `refillPerSecond` up to `capacity`; a new bucket is full. */
export const tokenBucketTokens = (
  state: TokenBucketState | undefined,
  now: number,
  capacity: number,
  refillPerSecond: number
): number =>
  state === undefined ? capacity : Math.min(capacity, state.tokens + ((now - state.at) * refillPerSecond) / 1000)

/** spec 7: whole seconds until the bucket holds one token again (rounded up, at least 1). */
export const tokenBucketRetryAfterSeconds = (tokens: number, refillPerSecond: number): number =>
  Math.max(1, Math.ceil((1 - tokens) / refillPerSecond))

/** How long a bucket's state must be kept: until it is full again, plus a second of slack. */
export const tokenBucketIdleMs = (tokens: number, capacity: number, refillPerSecond: number): number =>
  Math.ceil(((capacity - tokens) * 1000) / refillPerSecond) + 1000
