import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import * as fc from "fast-check"
import {
  DurationString,
  durationError,
  formatDuration,
  maxDurationMs,
  PositiveDurationString,
  parseDuration
} from "./Duration.ts"

describe("parseDuration", () => {
  it.each([
    ["1m", 60_000],
    ["15m", 900_000],
    ["60s", 60_000],
    ["1s", 1_000],
    ["5m", 300_000],
    ["1h30m", 5_400_000],
    ["500ms", 500],
    ["1.5s", 1_500],
    ["2d", 172_800_000],
    ["1.5h", 5_400_000],
    ["1d2h3m4s5ms", 93_784_005],
    ["0s", 0],
    ["0h0m", 0],
    ["007s", 7_000],
    ["1.250s", 1_250],
    ["36500d", maxDurationMs]
  ])("parses %j as %j ms", (text, ms) => {
    assert.strictEqual(parseDuration(text), ms)
  })

  it.each([
    ["", "must not be empty"],
    ["0", 'unexpected "0"'],
    ["10", 'unexpected "10"'],
    ["s", 'unexpected "s"'],
    ["1w", 'unexpected "1w"'],
    ["1y", 'unexpected "1y"'],
    ["1M", 'unexpected "1M"'],
    ["-1s", 'unexpected "-1s"'],
    ["+1s", 'unexpected "+1s"'],
    [" 1s", 'unexpected " 1s"'],
    ["1s ", 'unexpected " "'],
    ["1 s", 'unexpected "1 s"'],
    [".5s", 'unexpected ".5s"'],
    ["1.s", 'unexpected "1.s"'],
    ["1e3s", 'unexpected "1e3s"'],
    ["NaNs", 'unexpected "NaNs"'],
    ["Infinity", 'unexpected "Infinity"'],
    ["1s1s", "at most once, largest first"],
    ["30s1m", "at most once, largest first"],
    ["1ms1s", "at most once, largest first"],
    ["1.0005s", "whole number of milliseconds"],
    ["0.5ms", "whole number of milliseconds"],
    ["36500d1ms", "at most 36500d"],
    ["36501d", "at most 36500d"],
    ["123456789012345678901s", "too many digits"],
    ["1".repeat(129), "at most 128 characters"]
  ])("rejects %j (%s)", (text, reason) => {
    assert.strictEqual(parseDuration(text), undefined)
    assert.include(durationError(text), reason)
  })

  it("reports no error for a valid duration", () => {
    assert.strictEqual(durationError("1h30m"), undefined)
  })

  it("never throws and returns a whole number of ms within bounds or undefined", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.string({ unit: "grapheme" }), fc.stringMatching(/^[\d.a-z]{0,12}$/)),
        (text) => {
          const ms = parseDuration(text)
          assert.isTrue(ms === undefined || (Number.isSafeInteger(ms) && ms >= 0 && ms <= maxDurationMs))
          assert.strictEqual(ms === undefined, durationError(text) !== undefined)
        }
      ),
      { numRuns: 2_000 }
    )
  })
})

describe("formatDuration", () => {
  it.each([
    [0, "0s"],
    [1, "1ms"],
    [999, "999ms"],
    [1_000, "1s"],
    [60_000, "1m"],
    [5_400_000, "1h30m"],
    [93_784_005, "1d2h3m4s5ms"],
    [maxDurationMs, "36500d"],
    [1_500.4, "1s500ms"],
    [-5, "0s"],
    [Number.NaN, "0s"]
  ])("formats %j as %j", (ms, text) => {
    assert.strictEqual(formatDuration(ms), text)
  })

  it("round-trips every whole number of milliseconds within bounds", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: maxDurationMs }), (ms) => {
        assert.strictEqual(parseDuration(formatDuration(ms)), ms)
      }),
      { numRuns: 2_000 }
    )
  })
})

describe("DurationString", () => {
  it.effect("keeps the original text as the decoded value", () =>
    Effect.gen(function* () {
      assert.strictEqual(yield* Schema.decodeUnknownEffect(DurationString)("60s"), "60s")
      assert.strictEqual(yield* Schema.decodeUnknownEffect(DurationString)("0s"), "0s")
      assert.strictEqual(yield* Schema.decodeUnknownEffect(PositiveDurationString)("1.5s"), "1.5s")
    })
  )

  it.effect("rejects text that is not a duration with the expected message", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Schema.decodeUnknownEffect(DurationString)("1w"))
      assert.strictEqual(
        error.message,
        "must be a duration such as 500ms, 30s, 1m or 1h30m (units d, h, m, s, ms; largest first)"
      )
    })
  )

  it("PositiveDurationString rejects zero once and bad text once", () => {
    const zero = Schema.decodeUnknownExit(PositiveDurationString)("0m", { errors: "all" })
    assert.isTrue(Exit.isFailure(zero))
    assert.include(String(zero), "must be greater than zero")
    const bad = Schema.decodeUnknownExit(PositiveDurationString)("x", { errors: "all" })
    assert.include(String(bad), "must be a duration")
    assert.notInclude(String(bad), "must be greater than zero")
    assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(DurationString)(60)))
  })
})
