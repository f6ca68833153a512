import { assert, describe, it } from "@effect/vitest"
import * as fc from "fast-check"
import {
  algorithmParams,
  retryAfterSeconds,
  slidingCounterEstimate,
  slidingCounterWaitMs,
  tokenBucketRetryAfterSeconds,
  tokenBucketTokens,
  windowIndex,
  windowRemainderMs
} from "./RateLimitAlgorithm.ts"

describe("RateLimitAlgorithm", () => {
  it("reads windows as milliseconds and tells the sliding modes apart", () => {
    assert.deepStrictEqual(algorithmParams({ fixed_window: { window: "1m", limit: 5 } }), {
      kind: "fixed_window",
      windowMs: 60_000,
      limit: 5
    })
    assert.deepStrictEqual(algorithmParams({ sliding_window: { window: "1h30m", limit: 2, mode: "log" } }), {
      kind: "sliding_log",
      windowMs: 5_400_000,
      limit: 2
    })
    assert.strictEqual(
      algorithmParams({ sliding_window: { window: "1s", limit: 2, mode: "counter" } }).kind,
      "sliding_counter"
    )
    assert.deepStrictEqual(algorithmParams({ token_bucket: { capacity: 3, refill_rate: 0.5 } }), {
      kind: "token_bucket",
      capacity: 3,
      refillPerSecond: 0.5
    })
    assert.throws(() => algorithmParams({ fixed_window: { window: "soon", limit: 1 } }), RangeError)
  })

  it("Retry-After is whole seconds rounded up, at least 1 (spec 7)", () => {
    assert.deepStrictEqual([0, 1, 999, 1000, 1001, 59_999].map(retryAfterSeconds), [1, 1, 1, 1, 2, 60])
  })

  it("fixed windows start at multiples of the window", () => {
    assert.strictEqual(windowIndex(119_999, 60_000), 1)
    assert.strictEqual(windowIndex(120_000, 60_000), 2)
    assert.strictEqual(windowRemainderMs(119_999, 60_000), 1)
    assert.strictEqual(windowRemainderMs(120_000, 60_000), 60_000)
  })

  it("token buckets start full, refill fractionally and cap at capacity", () => {
    assert.strictEqual(tokenBucketTokens(undefined, 5, 4, 0.5), 4)
    assert.strictEqual(tokenBucketTokens({ tokens: 0, at: 0 }, 1_000, 4, 0.5), 0.5)
    assert.strictEqual(tokenBucketTokens({ tokens: 3, at: 0 }, 10_000, 4, 0.5), 4)
    assert.strictEqual(tokenBucketRetryAfterSeconds(0, 0.3), 4)
    assert.strictEqual(tokenBucketRetryAfterSeconds(0.9, 0.5), 1)
  })

  it("the sliding counter's wait is the first millisecond at which the estimate drops below the limit", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_000, max: 5_000 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 0, max: 10 }),
        fc.integer({ min: 0, max: 10 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (windowMs, limit, current, previous, fraction) => {
          const elapsed = Math.floor(fraction * windowMs)
          fc.pre(slidingCounterEstimate(current, previous, elapsed, windowMs) >= limit)
          // no request counted meanwhile: the next window holds 0 now and `current` as its previous
          const estimateAt = (e: number) =>
            e < windowMs
              ? slidingCounterEstimate(current, previous, e, windowMs)
              : slidingCounterEstimate(0, current, e - windowMs, windowMs)
          let e = elapsed
          while (estimateAt(e) >= limit) e++
          assert.strictEqual(slidingCounterWaitMs(current, previous, elapsed, windowMs, limit), e - elapsed)
        }
      )
    )
  })
})
