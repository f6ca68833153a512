/**
 * The connector definition's `rate_limiting` block (spec 2.9): the reactive per-connection
 * cool-down after an upstream 429. Decoding materialises every default; `exponential_backoff` is
 * optional (absent = not configured, so `default_retry_after` applies when no header parses).
 */
import { Effect, Schema } from "effect"
import { HeaderName } from "./ConnectorAuth.ts"
import { PositiveDurationString, parseDuration } from "./Duration.ts"

const day = 86_400_000

const durationAtMost = (maxMs: number, text: string) =>
  PositiveDurationString.check(
    Schema.makeFilter((value: string) => (parseDuration(value) ?? 0) <= maxMs, { message: `must be at most ${text}` })
  )

/** A cool-down duration: greater than zero, at most 1d. */
export const CoolDownDuration = durationAtMost(day, "1d")

const defaultKey = <S extends Schema.Top>(schema: S, value: S["Encoded"]) =>
  schema.pipe(Schema.withDecodingDefaultKey(Effect.succeed(value)))

/** `rate_limiting.exponential_backoff`: t_n = min(initial · multiplier^(n-1), max), jittered by ±j. */
export const ExponentialBackoff = Schema.Struct({
  initial_interval: defaultKey(CoolDownDuration, "1s"),
  multiplier: defaultKey(
    Schema.Finite.check(
      Schema.isBetween({ minimum: 1, maximum: 100 }, { message: "must be a number between 1 and 100" })
    ),
    2
  ),
  max_interval: defaultKey(CoolDownDuration, "5m"),
  jitter_fraction: defaultKey(
    Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }, { message: "must be a number between 0 and 1" })),
    0.1
  )
})
  .check(
    Schema.makeFilter(
      (backoff) =>
        (parseDuration(backoff.initial_interval) ?? 0) <= (parseDuration(backoff.max_interval) ?? 0) || {
          path: ["initial_interval"],
          issue: "must not exceed max_interval"
        },
      { expected: "initial_interval within max_interval" }
    )
  )
  .annotate({ identifier: "ExponentialBackoff" })
export type ExponentialBackoff = typeof ExponentialBackoff.Type

const uniqueHeaders = Schema.makeFilter(
  (names: ReadonlyArray<string>) =>
    names.flatMap((name, index) =>
      names.findIndex((other) => other.toLowerCase() === name.toLowerCase()) < index
        ? [{ path: [index], issue: "must not repeat a header (names are case-insensitive)" }]
        : []
    ),
  { expected: "unique headers" }
)

/** The `rate_limiting` block with every default of spec 2.9. */
export const ReactiveLimit = Schema.Struct({
  disabled: defaultKey(Schema.Boolean, false),
  retry_after_headers: defaultKey(
    Schema.Array(HeaderName).check(Schema.isMaxLength(16, { message: "must list at most 16 headers" }), uniqueHeaders),
    ["Retry-After"]
  ),
  max_retry_after: defaultKey(CoolDownDuration, "15m"),
  default_retry_after: defaultKey(CoolDownDuration, "60s"),
  exponential_backoff: Schema.optionalKey(ExponentialBackoff)
})
  .check(
    Schema.makeFilter(
      (limit) =>
        (parseDuration(limit.default_retry_after) ?? 0) <= (parseDuration(limit.max_retry_after) ?? 0) || {
          path: ["default_retry_after"],
          issue: "must not exceed max_retry_after"
        },
      { expected: "default_retry_after within max_retry_after" }
    )
  )
  .annotate({ identifier: "ReactiveLimit" })
export type ReactiveLimit = typeof ReactiveLimit.Type

/** The `rate_limiting` block of a definition that omits it: spec 2.9 defaults. */
export const defaultReactiveLimit: ReactiveLimit = {
  disabled: false,
  retry_after_headers: ["Retry-After"],
  max_retry_after: "15m",
  default_retry_after: "60s"
}
