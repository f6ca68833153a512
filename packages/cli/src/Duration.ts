/**
 * `--expires-in` durations in whole seconds, on the server's duration grammar
 * (`@svc/domain/Duration`: one or more `<number><unit>` parts with units `d`, `h`, `m`, `s`, `ms`,
 * largest first, each at most once, `30m`, `12h`, `7d`, `1h30m`, `1.5h`), plus the CLI's rules: the
 * lifetime is greater than zero and a whole number of seconds (a JWT `exp` counts seconds).
 */
import { durationError, maxDurationMs, parseDuration as parseDurationMs } from "@svc/domain/Duration"
import { Result, Schema } from "effect"

/** Longest accepted duration: 100 years of 365 days. */
export const maxDurationSeconds = maxDurationMs / 1000

/** A duration text that is not a positive whole number of seconds within the maximum. */
export class DurationError extends Schema.TaggedError<DurationError>()("DurationError", {
  input: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid duration "${this.input}": ${this.reason} (expected e.g. 45s, 30m, 12h, 7d or 1h30m)`
  }
}

/** Parses a duration into whole seconds (> 0, at most `maxDurationSeconds`). */
export const parseDuration = (input: string): Result.Result<number, DurationError> => {
  const fail = (reason: string) => Result.fail(new DurationError({ input, reason }))
  const ms = parseDurationMs(input)
  if (ms === undefined) return fail(durationError(input) ?? "not a duration")
  if (ms === 0) return fail("must be greater than zero")
  if (ms % 1000 !== 0) return fail("must be a whole number of seconds")
  return Result.succeed(ms / 1000)
}
