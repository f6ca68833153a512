/**
 * `--expires-in` durations: one or more `<digits><unit>` parts with units `d`, `h`, `m`, `s`,
 * largest unit first, each unit at most once (`30m`, `12h`, `7d`, `1h30m`, `1d2h3m4s`).
 */
import { Result, Schema } from "effect"

const unitSeconds = { d: 86_400, h: 3_600, m: 60, s: 1 } as const
type Unit = keyof typeof unitSeconds
const unitOrder: ReadonlyArray<Unit> = ["d", "h", "m", "s"]

/** Longest accepted duration: 100 years of 365 days. */
export const maxDurationSeconds = 36_500 * unitSeconds.d

/** A duration text that is not a positive `<n>d<n>h<n>m<n>s` combination within the maximum. */
export class DurationError extends Schema.TaggedError<DurationError>()("DurationError", {
  input: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `invalid duration "${this.input}": ${this.reason} (expected e.g. 45s, 30m, 12h, 7d or 1h30m)`
  }
}

const partPattern = /(\d+)([dhms])/y

/** Parses a duration into whole seconds (> 0, at most `maxDurationSeconds`). */
export const parseDuration = (input: string): Result.Result<number, DurationError> => {
  const fail = (reason: string) => Result.fail(new DurationError({ input, reason }))
  if (input.length === 0) return fail("empty")
  let total = 0
  let position = 0
  let lastUnit = -1
  while (position < input.length) {
    partPattern.lastIndex = position
    const match = partPattern.exec(input)
    if (match === null) {
      return fail(`unexpected "${input.slice(position)}"; each part is digits followed by one of d, h, m, s`)
    }
    const [, digits = "", unit = "s"] = match
    const unitIndex = unitOrder.indexOf(unit as Unit)
    if (unitIndex <= lastUnit) return fail("units must appear at most once, largest first (d, h, m, s)")
    lastUnit = unitIndex
    if (digits.length > 12) return fail("number too large")
    total += Number(digits) * unitSeconds[unit as Unit]
    position = partPattern.lastIndex
  }
  if (total <= 0) return fail("must be greater than zero")
  if (total > maxDurationSeconds) return fail("must be at most 36500d")
  return Result.succeed(total)
}

/** Formats whole seconds (> 0) in the canonical form `parseDuration` accepts, e.g. `1d2h3m4s`. */
export const formatDuration = (seconds: number): string => {
  let rest = Math.floor(seconds)
  let text = ""
  for (const unit of unitOrder) {
    const count = Math.floor(rest / unitSeconds[unit])
    if (count > 0) text += `${count}${unit}`
    rest -= count * unitSeconds[unit]
  }
  return text === "" ? "0s" : text
}
