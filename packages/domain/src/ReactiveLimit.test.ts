import { assert, describe, it } from "@effect/vitest"
import { Exit, Schema } from "effect"
import { definitionParseOptions } from "./ConnectorDefinition.ts"
import { issueDetails } from "./Errors.ts"
import { defaultReactiveLimit, ReactiveLimit } from "./ReactiveLimit.ts"

const decode = (input: unknown) => Schema.decodeUnknownExit(ReactiveLimit)(input, definitionParseOptions)

const problems = (input: unknown) => {
  const exit = decode(input)
  if (Exit.isSuccess(exit)) return []
  const reason = exit.cause.reasons[0]
  return reason?._tag === "Fail" ? issueDetails(reason.error.issue) : []
}

describe("ReactiveLimit (spec 2.9)", () => {
  it("materialises the spec defaults; exponential_backoff stays absent unless configured", () => {
    assert.deepStrictEqual(decode({}), Exit.succeed(defaultReactiveLimit))
    assert.deepStrictEqual(defaultReactiveLimit, {
      disabled: false,
      retry_after_headers: ["Retry-After"],
      max_retry_after: "15m",
      default_retry_after: "60s"
    })
  })

  it("fills the backoff defaults when the block is present", () => {
    assert.deepStrictEqual(
      decode({ exponential_backoff: {} }),
      Exit.succeed({
        ...defaultReactiveLimit,
        exponential_backoff: { initial_interval: "1s", multiplier: 2, max_interval: "5m", jitter_fraction: 0.1 }
      })
    )
  })

  it("keeps explicit values and decodes its own output unchanged", () => {
    const input = {
      disabled: true,
      retry_after_headers: ["X-Retry-In", "Retry-After"],
      max_retry_after: "1h",
      default_retry_after: "10s",
      exponential_backoff: { initial_interval: "500ms", multiplier: 1.5, max_interval: "1m", jitter_fraction: 0 }
    }
    assert.deepStrictEqual(decode(input), Exit.succeed(input))
  })

  it("validates ranges and relations", () => {
    assert.deepStrictEqual(
      problems({
        retry_after_headers: ["Retry-After", "retry-after", "bad header"],
        max_retry_after: "2d",
        exponential_backoff: { multiplier: 0.5, jitter_fraction: 1.5, initial_interval: "0s" }
      }).map((problem) => problem.field),
      [
        "retry_after_headers[2]",
        "max_retry_after",
        "exponential_backoff.initial_interval",
        "exponential_backoff.multiplier",
        "exponential_backoff.jitter_fraction"
      ]
    )
    assert.deepStrictEqual(problems({ retry_after_headers: ["Retry-After", "retry-after"] }), [
      { field: "retry_after_headers[1]", message: "must not repeat a header (names are case-insensitive)" }
    ])
    assert.deepStrictEqual(problems({ default_retry_after: "20m" }), [
      { field: "default_retry_after", message: "must not exceed max_retry_after" }
    ])
    assert.deepStrictEqual(problems({ exponential_backoff: { initial_interval: "10m" } }), [
      { field: "exponential_backoff.initial_interval", message: "must not exceed max_interval" }
    ])
    assert.deepStrictEqual(
      problems({ disabled: "yes" }).map((problem) => problem.field),
      ["disabled"]
    )
  })
})
