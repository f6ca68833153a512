/**
 * `--interval <duration>` of the commands that poll the api (`tasks get --wait`, `events tail`):
 * the server's duration grammar (`500ms`, `2s`, `1m`), at least 100 ms.
 */
import { durationError, parseDuration } from "@svc/domain/Duration"
import { Effect, Result, Schema, SchemaGetter, SchemaIssue } from "effect"
import { Flag } from "effect/cli"

/** Shortest poll interval accepted, so a typo cannot hammer the server. */
export const minIntervalMs = 100

/** Parses a poll interval into milliseconds. */
export const parseInterval = (text: string): Result.Result<number, string> => {
  const ms = parseDuration(text)
  if (ms === undefined) return Result.fail(`invalid duration "${text}": ${durationError(text) ?? "not a duration"}`)
  if (ms < minIntervalMs) return Result.fail(`must be at least ${minIntervalMs}ms (got "${text}")`)
  return Result.succeed(ms)
}

/** Duration text decoded to milliseconds (encoded back as `<n>ms`). */
export const IntervalMs = Schema.String.pipe(
  Schema.decodeTo(Schema.Number, {
    decode: SchemaGetter.transformEffect((text: string) =>
      Result.match(parseInterval(text), {
        onSuccess: (ms) => Effect.succeed(ms),
        onFailure: (message) => Effect.fail(new SchemaIssue.InvalidValue({ message }))
      })
    ),
    encode: SchemaGetter.transform((ms: number) => `${ms}ms`)
  })
)

/** `--interval` in milliseconds; `fallbackMs` when absent. */
export const intervalFlag = (description: string, fallbackMs: number) =>
  Flag.String("interval").pipe(
    Flag.withMetavar("DURATION"),
    Flag.withDescription(
      `${description} (default ${fallbackMs % 1000 === 0 ? `${fallbackMs / 1000}s` : `${fallbackMs}ms`}; e.g. 500ms, 2s, 1m)`
    ),
    Flag.withSchema(IntervalMs),
    Flag.withDefault(fallbackMs)
  )
