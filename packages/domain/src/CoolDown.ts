/**
 * The reactive limiter's cool-down arithmetic (spec 2.9) as the `Connection` entity applies it
 * after an upstream 429. Pure: no clock, no randomness.
 */

/** Constants of {@link provisionalCoolDownMillis}: the spec 2.9 defaults, without jitter. */
export const provisionalBackoff = {
  /** `max_retry_after`: cap on any cool-down. */
  maxRetryAfterMs: 15 * 60_000,
  /** `exponential_backoff.initial_interval`: the first 429's backoff. */
  initialIntervalMs: 1_000,
  /** `exponential_backoff.multiplier`: applied per consecutive 429. */
  multiplier: 2,
  /** `exponential_backoff.max_interval`: cap per step. */
  maxIntervalMs: 5 * 60_000
} as const

/**
 * PROVISIONAL — the length in milliseconds of the cool-down after the `consecutive429s`-th
 * consecutive upstream 429 (1 for the first): the upstream's Retry-After when it sent one (capped
 * at 15m), otherwise a capped exponential `min(1s · 2^(n-1), 5m)`. Never negative, no jitter.
 *
 * This is a stand-in until the exact spec 2.9 arithmetic lands (per-connector `rate_limiting`:
 * `disabled`, `default_retry_after`, configured `exponential_backoff` with jitter,
 * `max_retry_after`). That later issue replaces only this function; the entity's state
 * (consecutive count, cool-down end) and its callers stay as they are.
 */
export const provisionalCoolDownMillis = (consecutive429s: number, retryAfterMs: number | undefined): number => {
  if (retryAfterMs !== undefined)
    return Math.min(Math.max(0, Math.ceil(retryAfterMs)), provisionalBackoff.maxRetryAfterMs)
  const step = Math.max(1, Math.floor(consecutive429s)) - 1
  const backoff = provisionalBackoff.initialIntervalMs * provisionalBackoff.multiplier ** step
  return Math.min(backoff, provisionalBackoff.maxIntervalMs, provisionalBackoff.maxRetryAfterMs)
}
