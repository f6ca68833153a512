import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import * as fc from "fast-check"
import { definitionParseOptions } from "./ConnectorDefinition.ts"
import {
  type BackoffPolicy,
  backoffMillis,
  backoffStepMillis,
  type CoolDownPolicy,
  coolDownMillis,
  coolDownPolicy,
  defaultBackoffPolicy,
  defaultCoolDownPolicy
} from "./CoolDown.ts"
import { ReactiveLimit } from "./ReactiveLimit.ts"

const second = 1_000
const minute = 60 * second
const decode = (input: unknown) => Schema.decodeUnknownSync(ReactiveLimit)(input, definitionParseOptions)
const withBackoff = (backoff: Partial<BackoffPolicy> = {}): CoolDownPolicy => ({
  ...defaultCoolDownPolicy,
  exponentialBackoff: { ...defaultBackoffPolicy, ...backoff }
})

/** A uniform sample in [0, 1). */
const sample = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })
const backoffArb = fc.record({
  initialIntervalMs: fc.integer({ min: 1, max: 86_400_000 }),
  // Hundredths (1, 1.01 … 100), as configured multipliers are written; keeps pow's rounding out of the ordering.
  multiplier: fc.integer({ min: 100, max: 10_000 }).map((hundredths) => hundredths / 100),
  maxIntervalMs: fc.integer({ min: 1, max: 86_400_000 }),
  jitterFraction: fc.double({ min: 0, max: 1, noNaN: true })
})
const streak = fc.integer({ min: 1, max: 2_000 })

describe("coolDownPolicy (spec 2.9 rate_limiting in milliseconds)", () => {
  it("has the spec defaults; exponential backoff only when configured", () => {
    assert.deepStrictEqual(coolDownPolicy(decode({})), defaultCoolDownPolicy)
    assert.deepStrictEqual(defaultCoolDownPolicy, {
      disabled: false,
      retryAfterHeaders: ["Retry-After"],
      maxRetryAfterMs: 900_000,
      defaultRetryAfterMs: 60_000,
      exponentialBackoff: undefined
    })
    assert.deepStrictEqual(coolDownPolicy(decode({ exponential_backoff: {} })).exponentialBackoff, {
      initialIntervalMs: 1_000,
      multiplier: 2,
      maxIntervalMs: 300_000,
      jitterFraction: 0.1
    })
  })

  it("converts explicit settings", () => {
    const limit = decode({
      disabled: true,
      retry_after_headers: ["X-Retry-In", "Retry-After"],
      max_retry_after: "1h",
      default_retry_after: "10s",
      exponential_backoff: { initial_interval: "500ms", multiplier: 1.5, max_interval: "1m", jitter_fraction: 0 }
    })
    assert.deepStrictEqual(coolDownPolicy(limit), {
      disabled: true,
      retryAfterHeaders: ["X-Retry-In", "Retry-After"],
      maxRetryAfterMs: 3_600_000,
      defaultRetryAfterMs: 10_000,
      exponentialBackoff: { initialIntervalMs: 500, multiplier: 1.5, maxIntervalMs: 60_000, jitterFraction: 0 }
    })
  })
})

describe("coolDownMillis (spec 2.9)", () => {
  it("honours a parsed Retry-After, capped at max_retry_after, before any backoff", () => {
    for (const policy of [defaultCoolDownPolicy, withBackoff()]) {
      assert.strictEqual(coolDownMillis(policy, 1, 30_000, 0.5), 30_000)
      assert.strictEqual(coolDownMillis(policy, 7, 2_500, 0.5), 2_500)
      assert.strictEqual(coolDownMillis(policy, 1, 0, 0.5), 0)
      assert.strictEqual(coolDownMillis(policy, 1, 1_499.2, 0.5), 1_500)
      assert.strictEqual(coolDownMillis(policy, 1, 3_600_000, 0.5), 900_000)
    }
  })

  it("without a header and without backoff waits default_retry_after for every 429", () => {
    assert.deepStrictEqual(
      [1, 2, 3, 10, 1_000].map((n) => coolDownMillis(defaultCoolDownPolicy, n, undefined, 0.9)),
      [60_000, 60_000, 60_000, 60_000, 60_000]
    )
    const tight = { ...defaultCoolDownPolicy, maxRetryAfterMs: 30_000 }
    assert.strictEqual(coolDownMillis(tight, 1, undefined, 0.5), 30_000)
  })

  it("without a header backs off exponentially when configured: 1s, 2s, 4s … 5m, jittered ±10%", () => {
    assert.deepStrictEqual(
      [1, 2, 3, 4, 8, 9, 10, 100].map((n) => coolDownMillis(withBackoff(), n, undefined, 0.5)),
      [1_000, 2_000, 4_000, 8_000, 128_000, 256_000, 300_000, 300_000]
    )
    assert.strictEqual(coolDownMillis(withBackoff(), 1, undefined, 0), 900)
    assert.strictEqual(coolDownMillis(withBackoff(), 1, undefined, 0.25), 950)
    assert.strictEqual(coolDownMillis(withBackoff(), 1, undefined, 0.999_999), 1_100)
    assert.strictEqual(coolDownMillis(withBackoff(), 10, undefined, 0), 270_000)
    assert.strictEqual(coolDownMillis(withBackoff(), 10, undefined, 0.999_999), 330_000)
  })

  it("caps the jittered backoff at max_retry_after", () => {
    const policy = { ...withBackoff({ maxIntervalMs: 15 * minute }), maxRetryAfterMs: 10 * minute }
    assert.strictEqual(coolDownMillis(policy, 100, undefined, 0.999), 10 * minute)
    fc.assert(
      fc.property(backoffArb, streak, sample, fc.integer({ min: 0, max: 86_400_000 }), (backoff, n, u, cap) => {
        const wait = coolDownMillis({ ...withBackoff(backoff), maxRetryAfterMs: cap }, n, undefined, u)
        assert.strictEqual(wait, Math.min(backoffMillis(backoff, n, u), cap))
      })
    )
  })

  it("records no cool-down when disabled, whatever the header or streak", () => {
    fc.assert(
      fc.property(
        fc.boolean(),
        streak,
        fc.option(fc.nat(), { nil: undefined }),
        sample,
        (configured, n, retryAfter, u) => {
          const policy = { ...(configured ? withBackoff() : defaultCoolDownPolicy), disabled: true }
          assert.strictEqual(coolDownMillis(policy, n, retryAfter, u), undefined)
        }
      )
    )
  })

  it("is a whole number of milliseconds between 0 and max_retry_after", () => {
    fc.assert(
      fc.property(
        fc.option(backoffArb, { nil: undefined }),
        fc.integer({ min: -5, max: 5_000 }),
        fc.option(fc.double({ min: -1e18, max: 1e18, noNaN: true }), { nil: undefined }),
        sample,
        fc.integer({ min: 1, max: 86_400_000 }),
        (exponentialBackoff, n, retryAfter, u, cap) => {
          const policy = { ...defaultCoolDownPolicy, exponentialBackoff, maxRetryAfterMs: cap }
          const wait = coolDownMillis(policy, n, retryAfter, u)
          assert.isTrue(wait !== undefined && Number.isSafeInteger(wait) && wait >= 0 && wait <= cap)
        }
      )
    )
  })
})

describe("exponential backoff (spec 2.9 exponential_backoff)", () => {
  it("multiplies each step by the multiplier until max_interval, then stays there", () => {
    fc.assert(
      fc.property(backoffArb, streak, (backoff, n) => {
        const step = backoffStepMillis(backoff, n)
        const next = backoffStepMillis(backoff, n + 1)
        assert.isTrue(next >= step)
        assert.isTrue(step <= backoff.maxIntervalMs)
        const uncapped = backoff.initialIntervalMs * backoff.multiplier ** n
        if (uncapped < backoff.maxIntervalMs) assert.closeTo(next, step * backoff.multiplier, 1e-6 * next)
        else assert.strictEqual(next, backoff.maxIntervalMs)
      })
    )
    assert.strictEqual(backoffStepMillis(defaultBackoffPolicy, 1), 1_000)
    assert.strictEqual(backoffStepMillis({ ...defaultBackoffPolicy, multiplier: 1 }, 1e9), 1_000)
    assert.strictEqual(backoffStepMillis(defaultBackoffPolicy, Number.MAX_SAFE_INTEGER), 300_000)
  })

  it("treats a streak below one as the first 429", () => {
    for (const n of [0, -3, 0.5, Number.NaN]) assert.strictEqual(backoffStepMillis(defaultBackoffPolicy, n), 1_000)
  })

  it("is monotone in the streak for a fixed sample", () => {
    fc.assert(
      fc.property(backoffArb, streak, streak, sample, (backoff, a, b, u) => {
        const [low, high] = a <= b ? [a, b] : [b, a]
        assert.isTrue(backoffMillis(backoff, low, u) <= backoffMillis(backoff, high, u))
      })
    )
  })

  it("samples within [(1-j)·t, (1+j)·t], linearly in the sample", () => {
    fc.assert(
      fc.property(backoffArb, streak, sample, sample, (backoff, n, u, v) => {
        const t = backoffStepMillis(backoff, n)
        const j = backoff.jitterFraction
        const wait = backoffMillis(backoff, n, u)
        assert.isTrue(Number.isSafeInteger(wait))
        assert.isTrue(wait >= Math.floor((1 - j) * t) && wait <= Math.ceil((1 + j) * t))
        assert.isTrue(u <= v ? wait <= backoffMillis(backoff, n, v) : wait >= backoffMillis(backoff, n, v))
        assert.strictEqual(wait, Math.round(t * (1 - j + 2 * j * u)))
      })
    )
  })

  it("has no jitter when jitter_fraction is 0, and a seeded run repeats exactly", () => {
    fc.assert(
      fc.property(backoffArb, streak, sample, (backoff, n, u) => {
        const exact = { ...backoff, jitterFraction: 0 }
        assert.strictEqual(backoffMillis(exact, n, u), Math.round(backoffStepMillis(exact, n)))
      })
    )
    const run = () =>
      fc
        .sample(fc.tuple(streak, sample), { seed: 42, numRuns: 50 })
        .map(([n, u]) => backoffMillis(defaultBackoffPolicy, n, u))
    assert.deepStrictEqual(run(), run())
  })
})

describe("coolDownMillis with a jitter-free backoff at the spec defaults", () => {
  const unjittered: CoolDownPolicy = {
    ...defaultCoolDownPolicy,
    exponentialBackoff: { ...defaultBackoffPolicy, jitterFraction: 0 }
  }
  const millis = (n: number, retryAfterMs: number | undefined) => coolDownMillis(unjittered, n, retryAfterMs, 0.9)

  it("honours the upstream's Retry-After, capped at 15m", () => {
    assert.strictEqual(millis(1, 30_000), 30_000)
    assert.strictEqual(millis(7, 2_500), 2_500)
    assert.strictEqual(millis(1, 0), 0)
    assert.strictEqual(millis(1, 3_600_000), 900_000)
  })

  it("without Retry-After doubles from 1s per consecutive 429, capped at 5m", () => {
    assert.deepStrictEqual(
      [1, 2, 3, 4, 8, 9, 10, 100].map((n) => millis(n, undefined)),
      [1_000, 2_000, 4_000, 8_000, 128_000, 256_000, 300_000, 300_000]
    )
  })

  it("treats a count below one as the first 429", () => {
    assert.strictEqual(millis(0, undefined), 1_000)
  })
})
