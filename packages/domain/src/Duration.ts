/**
 * Duration strings of the spec (`1m`, `15m`, `60s`, `5m`, `1h30m`, `500ms`, `1.5s`, `2d`): one or more
 * `<number><unit>` groups with units `d`, `h`, `m`, `s`, `ms`, each unit at most once and largest
 * first (Prometheus style). A number is digits with an optional decimal fraction; there is no sign,
 * no space and no unit-less number. The value must be a whole number of milliseconds and at most
 * 100 years (36500d).
 */
import { Schema } from "effect"

const unitMs = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000, ms: 1 } as const
type Unit = keyof typeof unitMs
const unitOrder: ReadonlyArray<Unit> = ["d", "h", "m", "s", "ms"]

/** Longest accepted duration in milliseconds: 100 years of 365 days. */
export const maxDurationMs = 36_500 * unitMs.d

const maxTextLength = 128
const maxDigits = 20
const groupPattern = /(\d+)(?:\.(\d+))?(ms|d|h|m|s)/y

/** Why `text` is not a duration string, or `undefined` when it is one. */
export const durationError = (text: string): string | undefined => {
  const result = parse(text)
  return typeof result === "string" ? result : undefined
}

/** Milliseconds of a duration string, or `undefined` when it is not one; never throws. */
export const parseDuration = (text: string): number | undefined => {
  const result = parse(text)
  return typeof result === "number" ? result : undefined
}

const parse = (text: string): number | string => {
  if (typeof text !== "string" || text.length === 0) return "must not be empty"
  if (text.length > maxTextLength) return `must be at most ${maxTextLength} characters`
  let total = 0n
  let position = 0
  let lastUnit = -1
  while (position < text.length) {
    groupPattern.lastIndex = position
    const match = groupPattern.exec(text)
    if (match === null)
      return `unexpected "${text.slice(position)}": each part is a number followed by d, h, m, s or ms`
    const [, whole = "", fraction = "", unit = "ms"] = match
    const unitIndex = unitOrder.indexOf(unit as Unit)
    if (unitIndex <= lastUnit) return "units must appear at most once, largest first (d, h, m, s, ms)"
    lastUnit = unitIndex
    if (whole.length > maxDigits || fraction.length > maxDigits) return "number has too many digits"
    const scale = 10n ** BigInt(fraction.length)
    const scaled = BigInt(whole + fraction) * BigInt(unitMs[unit as Unit])
    if (scaled % scale !== 0n) return "must be a whole number of milliseconds"
    total += scaled / scale
    position = groupPattern.lastIndex
  }
  if (total > BigInt(maxDurationMs)) return "must be at most 36500d"
  return Number(total)
}

/** Canonical text of a non-negative whole number of milliseconds (`1d2h3m4s5ms`, `0s` for zero). */
export const formatDuration = (ms: number): string => {
  let rest = Number.isFinite(ms) ? Math.max(0, Math.round(ms)) : 0
  let text = ""
  for (const unit of unitOrder) {
    const count = Math.floor(rest / unitMs[unit])
    if (count > 0) text += `${count}${unit}`
    rest -= count * unitMs[unit]
  }
  return text === "" ? "0s" : text
}

/** A string that parses as a duration (zero allowed); the decoded value is the original text. */
export const DurationString = Schema.String.check(
  Schema.makeFilter((text: string) => durationError(text) === undefined, {
    expected: "a duration such as 500ms, 30s, 1m or 1h30m",
    message: "must be a duration such as 500ms, 30s, 1m or 1h30m (units d, h, m, s, ms; largest first)"
  })
)

/** A duration string greater than zero. */
export const PositiveDurationString = DurationString.check(
  Schema.makeFilter((text: string) => parseDuration(text) !== 0, {
    expected: "a duration greater than zero",
    message: "must be greater than zero"
  })
)
