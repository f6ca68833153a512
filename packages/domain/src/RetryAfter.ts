/**
 * The wait an upstream 429 asks for (spec 2.9 `retry_after_headers`): each value is delay-seconds,
 * an HTTP-date in any of the three forms RFC 7231 7.1.1.1 obliges recipients to accept
 * (IMF-fixdate, RFC 850, asctime), or an ISO 8601 timestamp with a UTC offset. Waits are whole
 * milliseconds from an explicit `now`; a past date is 0. Pure: no clock, never throws.
 */
import { maxDurationMs } from "./Duration.ts"

/** Response headers: any casing of names, one value or several per name (Effect and Node shapes). */
export type ResponseHeaders = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

/** What {@link retryAfterMillis} reads from the connector's `rate_limiting`, in milliseconds. */
export interface RetryAfterSettings {
  readonly retryAfterHeaders: ReadonlyArray<string>
  readonly maxRetryAfterMs: number
}

/** Longest wait {@link parseRetryAfter} returns: larger delays saturate here (as RFC 9111 1.2.2 asks of delta-seconds). */
export const saturatedWaitMs = maxDurationMs

/** ECMAScript's time value range: instants beyond ±8.64e15 ms are not representable. */
const maxInstantMs = 8.64e15
const dayMs = 86_400_000
const maxDateTextLength = 64

const months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
const monthNames = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
const dayNames = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"
const longDayNames = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"

// RFC 7231 7.1.1.1; names are matched without regard to case, the weekday is not checked against the date.
const imfFixdate = new RegExp(
  `^(?:${dayNames}), (\\d{2}) (${monthNames}) (\\d{4}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`,
  "i"
)
const rfc850Date = new RegExp(
  `^(?:${longDayNames}), (\\d{2})-(${monthNames})-(\\d{2}) (\\d{2}):(\\d{2}):(\\d{2}) GMT$`,
  "i"
)
const asctimeDate = new RegExp(
  `^(?:${dayNames}) (${monthNames}) (\\d{2}| \\d) (\\d{2}):(\\d{2}):(\\d{2}) (\\d{4})$`,
  "i"
)

// ISO 8601 date-time with an offset: extended (RFC 3339, plus ±YYYYYY years) or basic format.
const isoExtended =
  /^([+-]\d{6}|\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)$/
const isoBasic = /^(\d{4})(\d{2})(\d{2})[Tt](\d{2})(\d{2})(?:(\d{2})(?:[.,](\d+))?)?([Zz]|[+-]\d{2}(?:\d{2})?)$/

const delaySeconds = /^\d+$/

/** Days since 1970-01-01 of a proleptic Gregorian date (any integer year; month 1-12). */
const daysFromCivil = (year: number, month: number, day: number): number => {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * ((month + 9) % 12) + 2) / 5) + day - 1
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear
  return era * 146_097 + dayOfEra - 719_468
}

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0

const daysInMonth = (year: number, month: number) =>
  month === 2 ? (isLeapYear(year) ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31

/** Epoch ms of a UTC calendar time (second 60 is a leap second), or `undefined` when a field is out of range. */
const utcInstant = (
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  millis: number
): number | undefined => {
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined
  if (hour > 23 || minute > 59 || second > 60) return undefined
  const instant = daysFromCivil(year, month, day) * dayMs + hour * 3_600_000 + minute * 60_000 + second * 1_000 + millis
  return Math.abs(instant) <= maxInstantMs ? instant : undefined
}

const monthNumber = (name: string) => months.indexOf(name.toLowerCase()) + 1

/**
 * RFC 7231 7.1.1.1: a two-digit year more than 50 years in the future is the most recent past year
 * with those digits; otherwise the year within the next 50 with them.
 */
const rfc850Year = (twoDigits: number, now: number): number => {
  const current = new Date(now).getUTCFullYear()
  const year = current - (current % 100) + twoDigits
  return year > current + 50 ? year - 100 : year <= current - 50 ? year + 100 : year
}

/**
 * Epoch ms of an HTTP-date: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850
 * (`Sunday, 06-Nov-94 08:49:37 GMT`, its century chosen relative to `now`) or asctime
 * (`Sun Nov  6 08:49:37 1994`); `undefined` when `text` is none of them or names no real time.
 */
export const parseHttpDate = (text: string, now: number): number | undefined => {
  if (typeof text !== "string" || text.length > maxDateTextLength) return undefined
  const imf = imfFixdate.exec(text)
  if (imf !== null) {
    const [, day = "", month = "", year = "", hour = "", minute = "", second = ""] = imf
    return utcInstant(+year, monthNumber(month), +day, +hour, +minute, +second, 0)
  }
  const rfc850 = rfc850Date.exec(text)
  if (rfc850 !== null) {
    if (!Number.isFinite(now)) return undefined
    const [, day = "", month = "", year = "", hour = "", minute = "", second = ""] = rfc850
    return utcInstant(rfc850Year(+year, now), monthNumber(month), +day, +hour, +minute, +second, 0)
  }
  const asctime = asctimeDate.exec(text)
  if (asctime !== null) {
    const [, month = "", day = "", hour = "", minute = "", second = "", year = ""] = asctime
    return utcInstant(+year, monthNumber(month), +day.trim(), +hour, +minute, +second, 0)
  }
  return undefined
}

/** Milliseconds of a decimal fraction of a second, rounded up (a wait is never shortened). */
const fractionMillis = (digits: string): number => {
  const millis = Number(digits.slice(0, 3).padEnd(3, "0"))
  return /[1-9]/.test(digits.slice(3)) ? millis + 1 : millis
}

/** Offset east of UTC in ms of `Z`, `±hh`, `±hhmm` or `±hh:mm`; `undefined` when out of range. */
const offsetMillis = (text: string): number | undefined => {
  if (text === "Z" || text === "z") return 0
  const digits = text.slice(1).replace(":", "")
  const hours = Number(digits.slice(0, 2))
  const minutes = digits.length > 2 ? Number(digits.slice(2)) : 0
  if (hours > 23 || minutes > 59) return undefined
  return (text[0] === "-" ? -1 : 1) * (hours * 3_600_000 + minutes * 60_000)
}

/**
 * Epoch ms of an ISO 8601 date-time with a UTC offset (`2026-11-24T03:40:00Z`,
 * `2026-11-24T05:40:00.250+02:00`, `20261124T034000Z`, `+010000-01-01T00:00:00Z`); `undefined` for
 * local times without an offset, impossible fields, or instants outside ECMAScript's range.
 */
export const parseIsoTimestamp = (text: string): number | undefined => {
  if (typeof text !== "string" || text.length > maxDateTextLength) return undefined
  const match = isoExtended.exec(text) ?? isoBasic.exec(text)
  if (match === null) return undefined
  const [, year = "", month = "", day = "", hour = "", minute = "", second = "0", fraction = "", offset = ""] = match
  const offsetMs = offsetMillis(offset)
  if (offsetMs === undefined) return undefined
  const local = utcInstant(+year, +month, +day, +hour, +minute, +second, fractionMillis(fraction))
  if (local === undefined) return undefined
  const instant = local - offsetMs
  return Math.abs(instant) <= maxInstantMs ? instant : undefined
}

const isOws = (char: string | undefined) => char === " " || char === "\t"

/** Strips optional whitespace (SP, HTAB) at both ends in linear time. */
const trimOws = (text: string) => {
  let start = 0
  let end = text.length
  while (start < end && isOws(text[start])) start++
  while (end > start && isOws(text[end - 1])) end--
  return text.slice(start, end)
}

/**
 * The wait in whole milliseconds that one Retry-After value asks for at `now` (epoch ms):
 * delay-seconds, an HTTP-date or an ISO 8601 timestamp; 0 for a past date, at most
 * {@link saturatedWaitMs}; `undefined` when the value is none of these.
 */
export const parseRetryAfter = (value: string, now: number): number | undefined => {
  if (typeof value !== "string") return undefined
  const text = trimOws(value)
  if (delaySeconds.test(text)) {
    const digits = text.replace(/^0+(?=\d)/, "")
    const seconds = digits.length > 15 ? Number.POSITIVE_INFINITY : Number(digits)
    return Math.min(seconds * 1_000, saturatedWaitMs)
  }
  if (!Number.isFinite(now)) return undefined
  const instant = parseHttpDate(text, now) ?? parseIsoTimestamp(text)
  if (instant === undefined) return undefined
  return Math.min(Math.max(0, Math.ceil(instant - now)), saturatedWaitMs)
}

const headerValues = (headers: ResponseHeaders, name: string): ReadonlyArray<string> => {
  const wanted = name.toLowerCase()
  const values: Array<string> = []
  for (const key of Object.keys(headers)) {
    if (key.toLowerCase() !== wanted) continue
    const value = headers[key]
    if (typeof value === "string") values.push(value)
    else if (value !== undefined) for (const item of value) if (typeof item === "string") values.push(item)
  }
  return values
}

/**
 * The upstream's requested wait (spec 2.9): the headers in `retryAfterHeaders` are read in order
 * and the first parseable value wins, capped at `maxRetryAfterMs`; `undefined` when none parses.
 */
export const retryAfterMillis = (
  headers: ResponseHeaders,
  settings: RetryAfterSettings,
  now: number
): number | undefined => {
  for (const name of settings.retryAfterHeaders) {
    for (const value of headerValues(headers, name)) {
      const wait = parseRetryAfter(value, now)
      if (wait !== undefined) return Math.min(wait, Math.max(0, settings.maxRetryAfterMs))
    }
  }
  return undefined
}
