/**
 * The reactive limiter's cool-down arithmetic (spec 2.9) as the `Connection` entity applies it
 * after an upstream 429. Pure: no clock; randomness is a sample the caller draws.
 */
import { parseDuration } from "./Duration.ts"
import type { ReactiveLimit } from "./ReactiveLimit.ts"
import type { RetryAfterSettings } from "./RetryAfter.ts"

/** `rate_limiting.exponential_backoff` in milliseconds. */
export interface BackoffPolicy {
  readonly initialIntervalMs: number
  readonly multiplier: number
  readonly maxIntervalMs: number
  readonly jitterFraction: number
}

/** A connector's `rate_limiting` in milliseconds; `exponentialBackoff` is absent unless configured. */
export interface CoolDownPolicy extends RetryAfterSettings {
  readonly disabled: boolean
  readonly defaultRetryAfterMs: number
  readonly exponentialBackoff: BackoffPolicy | undefined
}

/** The spec 2.9 defaults of `exponential_backoff`: 1s, ×2, 5m, jitter 0.1. */
export const defaultBackoffPolicy: BackoffPolicy = {
  initialIntervalMs: 1_000,
  multiplier: 2,
  maxIntervalMs: 5 * 60_000,
  jitterFraction: 0.1
}

/** The spec 2.9 defaults of `rate_limiting`: enabled, `[Retry-After]`, 15m cap, 60s default, no backoff. */
export const defaultCoolDownPolicy: CoolDownPolicy = {
  disabled: false,
  retryAfterHeaders: ["Retry-After"],
  maxRetryAfterMs: 15 * 60_000,
  defaultRetryAfterMs: 60_000,
  exponentialBackoff: undefined
}

const millis = (text: string, fallback: number) => parseDuration(text) ?? fallback

/** The decoded `rate_limiting` block in milliseconds (its durations are valid once decoded). */
export const coolDownPolicy = (limit: ReactiveLimit): CoolDownPolicy => {
  const backoff = limit.exponential_backoff
  return {
    disabled: limit.disabled,
    retryAfterHeaders: limit.retry_after_headers,
    maxRetryAfterMs: millis(limit.max_retry_after, defaultCoolDownPolicy.maxRetryAfterMs),
    defaultRetryAfterMs: millis(limit.default_retry_after, defaultCoolDownPolicy.defaultRetryAfterMs),
    exponentialBackoff:
      backoff === undefined
        ? undefined
        : {
            initialIntervalMs: millis(backoff.initial_interval, defaultBackoffPolicy.initialIntervalMs),
            multiplier: backoff.multiplier,
            maxIntervalMs: millis(backoff.max_interval, defaultBackoffPolicy.maxIntervalMs),
            jitterFraction: backoff.jitter_fraction
          }
  }
}

const clamp = (value: number, min: number, max: number) => Math.min(Math.max(value, min), max)

/** A count below one (or not a number) is the first 429. */
const streak = (consecutive429s: number) =>
  Number.isNaN(consecutive429s) ? 1 : Math.max(1, Math.floor(consecutive429s))

/**
 * The backoff step of the `consecutive429s`-th consecutive 429 (1 for the first) before jitter:
 * `min(initial · multiplier^(n-1), max_interval)` — non-decreasing in n.
 */
export const backoffStepMillis = (backoff: BackoffPolicy, consecutive429s: number): number => {
  const max = Math.max(0, backoff.maxIntervalMs)
  const raw =
    backoff.multiplier === 1
      ? backoff.initialIntervalMs
      : backoff.initialIntervalMs * backoff.multiplier ** (streak(consecutive429s) - 1)
  return raw < max ? Math.max(0, raw) : max
}

/**
 * The jittered backoff in whole milliseconds (spec 2.9): step t sampled uniformly in
 * [(1-j)·t, (1+j)·t] by `sample`, a uniform number in [0, 1) such as `Random.next` draws.
 */
export const backoffMillis = (backoff: BackoffPolicy, consecutive429s: number, sample: number): number => {
  const step = backoffStepMillis(backoff, consecutive429s)
  const jitter = Number.isFinite(backoff.jitterFraction) ? clamp(backoff.jitterFraction, 0, 1) : 0
  const u = Number.isFinite(sample) ? clamp(sample, 0, 1) : 0.5
  return Math.round(step * (1 - jitter + 2 * jitter * u))
}

/**
 * The length in whole milliseconds of the cool-down after the `consecutive429s`-th consecutive
 * upstream 429 (spec 2.9): the upstream's parsed wait when it sent one, otherwise the jittered
 * exponential backoff when configured, otherwise `default_retry_after`; always at most
 * `max_retry_after`. `undefined` when the limiter is disabled: no cool-down is recorded.
 */
export const coolDownMillis = (
  policy: CoolDownPolicy,
  consecutive429s: number,
  retryAfterMs: number | undefined,
  sample: number
): number | undefined => {
  if (policy.disabled) return undefined
  const cap = Math.max(0, policy.maxRetryAfterMs)
  if (retryAfterMs !== undefined && !Number.isNaN(retryAfterMs))
    return Math.min(Math.max(0, Math.ceil(retryAfterMs)), cap)
  const wait =
    policy.exponentialBackoff === undefined
      ? policy.defaultRetryAfterMs
      : backoffMillis(policy.exponentialBackoff, consecutive429s, sample)
  return Math.min(Math.max(0, wait), cap)
}
