import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import { formatDuration } from "@svc/domain/Duration"
import { maxDurationSeconds, parseDuration } from "./Duration.ts"

/** The domain formats milliseconds; the CLI counts whole seconds. */
const formatSeconds = (seconds: number) => formatDuration(seconds * 1000)

const parsed = (input: string) => {
  const result = parseDuration(input)
  if (Result.isFailure(result)) throw new Error(`expected "${input}" to parse: ${result.failure.message}`)
  return result.success
}

const failure = (input: string) => {
  const result = parseDuration(input)
  if (Result.isSuccess(result)) throw new Error(`expected "${input}" to be rejected, got ${result.success}`)
  return result.failure
}

describe("parseDuration", () => {
  it.each([
    ["45s", 45],
    ["30m", 1_800],
    ["12h", 43_200],
    ["7d", 604_800],
    ["90d", 7_776_000],
    ["1h30m", 5_400],
    ["1d2h3m4s", 93_784],
    ["2d30s", 172_830],
    ["0h15m", 900],
    ["1.5h", 5_400],
    ["2000ms", 2],
    ["1m30000ms", 90],
    ["36500d", maxDurationSeconds]
  ])("parses %s as %i seconds", (input, seconds) => {
    assert.strictEqual(parsed(input), seconds)
  })

  it.each([
    ["", "empty"],
    ["0s", "greater than zero"],
    ["0d0h", "greater than zero"],
    ["10", 'unexpected "10"'],
    ["h", 'unexpected "h"'],
    ["1w", 'unexpected "1w"'],
    ["500ms", "whole number of seconds"],
    ["1.0005s", "whole number of milliseconds"],
    [".5h", 'unexpected ".5h"'],
    ["1h.5m", 'unexpected ".5m"'],
    ["-1h", 'unexpected "-1h"'],
    [" 1h", 'unexpected " 1h"'],
    ["1h ", 'unexpected " "'],
    ["1H", 'unexpected "1H"'],
    ["1h1h", "at most once"],
    ["30m1h", "largest first"],
    ["36501d", "at most 36500d"],
    ["9999999999999s", "at most 36500d"],
    ["123456789012345678901s", "too many digits"]
  ])("rejects %j (%s)", (input, reason) => {
    const error = failure(input)
    assert.strictEqual(error._tag, "DurationError")
    assert.include(error.reason, reason)
    assert.include(error.message, `invalid duration "${input}"`)
    assert.include(error.message, "expected e.g. 45s, 30m, 12h, 7d or 1h30m")
  })

  it("formatting then parsing returns the same number of seconds", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: maxDurationSeconds }), (seconds) => {
        assert.strictEqual(parsed(formatSeconds(seconds)), seconds)
      })
    )
  })

  it("parsing then formatting yields the canonical text, which parses to the same value", () => {
    const part = (max: number) => fc.option(fc.integer({ min: 0, max }), { nil: undefined })
    fc.assert(
      fc.property(part(1_000), part(100), part(100), part(100), (d, h, m, s) => {
        const text = [
          [d, "d"],
          [h, "h"],
          [m, "m"],
          [s, "s"]
        ]
          .filter(([count]) => count !== undefined)
          .map(([count, unit]) => `${count}${unit}`)
          .join("")
        const total = (d ?? 0) * 86_400 + (h ?? 0) * 3_600 + (m ?? 0) * 60 + (s ?? 0)
        if (total === 0) {
          assert.isTrue(Result.isFailure(parseDuration(text)))
          return
        }
        assert.strictEqual(parsed(text), total)
        assert.strictEqual(parsed(formatSeconds(total)), total)
        assert.match(formatSeconds(total), /^(\d+d)?(\d+h)?(\d+m)?(\d+s)?$/)
      })
    )
  })

  it("rejects any text containing a character outside digits, the decimal point and d, h, m, s", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }).filter((text) => /[^0-9.dhms]/.test(text)),
        (text) => {
          assert.isTrue(Result.isFailure(parseDuration(text)))
        }
      )
    )
  })

  it("rejects a unit without digits and digits without a unit", () => {
    fc.assert(
      fc.property(fc.constantFrom("d", "h", "m", "s"), fc.nat({ max: 10_000 }), (unit, count) => {
        assert.isTrue(Result.isFailure(parseDuration(unit)))
        assert.isTrue(Result.isFailure(parseDuration(`${count}`)))
        assert.isTrue(Result.isFailure(parseDuration(`${count + 1}${unit}${unit}`)))
      })
    )
  })
})

describe("formatDuration (domain), in seconds", () => {
  it.each([
    [45, "45s"],
    [5_400, "1h30m"],
    [93_784, "1d2h3m4s"],
    [7_776_000, "90d"]
  ])("formats %i as %s", (seconds, text) => {
    assert.strictEqual(formatSeconds(seconds), text)
  })
})
