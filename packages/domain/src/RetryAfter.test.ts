import { assert, describe, it } from "@effect/vitest"
import { Headers } from "effect/http"
import * as fc from "fast-check"
import { hostileText } from "./testing/HostileInput.ts"
import { parseHttpDate, parseIsoTimestamp, parseRetryAfter, retryAfterMillis, saturatedWaitMs } from "./RetryAfter.ts"

const second = 1_000
const minute = 60 * second
const year = 365.25 * 86_400_000
/** RFC 7231's example instant, Sun, 06 Nov 1994 08:49:37 GMT. */
const example = Date.UTC(1994, 10, 6, 8, 49, 37)
const now = Date.UTC(2026, 10, 24, 3, 40, 0, 123)
const settings = { retryAfterHeaders: ["Retry-After"], maxRetryAfterMs: 15 * minute }

const days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
const longDays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
const monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
const pad = (value: number, width = 2, fill = "0") => String(value).padStart(width, fill)
const clock = (date: Date) => `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}`

/** The three HTTP-date forms of RFC 7231 7.1.1.1 (IMF-fixdate through the platform's own formatter). */
const imfFixdate = (ms: number) => new Date(ms).toUTCString()
const rfc850 = (ms: number) => {
  const date = new Date(ms)
  const yy = pad(date.getUTCFullYear() % 100)
  return `${longDays[date.getUTCDay()]}, ${pad(date.getUTCDate())}-${monthNames[date.getUTCMonth()]}-${yy} ${clock(date)} GMT`
}
const asctime = (ms: number) => {
  const date = new Date(ms)
  const day = pad(date.getUTCDate(), 2, " ")
  return `${days[date.getUTCDay()]} ${monthNames[date.getUTCMonth()]} ${day} ${clock(date)} ${pad(date.getUTCFullYear(), 4)}`
}
/** ISO 8601 extended format in the local time of a UTC offset (minutes east). */
const isoWithOffset = (ms: number, offsetMinutes: number) => {
  const local = new Date(ms + offsetMinutes * minute).toISOString().slice(0, -1)
  const sign = offsetMinutes < 0 ? "-" : "+"
  const abs = Math.abs(offsetMinutes)
  return `${local}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`
}

/** Whole-second instants in years 1000..9999, the range all three HTTP-date forms can name. */
const httpInstant = fc
  .integer({ min: Date.UTC(1000, 0, 1) / second, max: Date.UTC(9999, 11, 31, 23, 59, 59) / second })
  .map((s) => s * second)
/** Every instant ECMAScript can represent (toISOString writes ±YYYYYY years outside 0..9999). */
const anyInstant = fc.integer({ min: -8.64e15, max: 8.64e15 })
const nowArb = fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(2400, 0, 1) })
const junk = fc.string({ unit: fc.constantFrom(..."abcxyz!?;#/é\u0000\r\n\u007f"), minLength: 1, maxLength: 8 })

describe("parseRetryAfter: delay-seconds", () => {
  it.each([
    ["120", 120 * second],
    ["0", 0],
    ["007", 7 * second],
    [" \t5 ", 5 * second],
    ["86400", 86_400 * second]
  ])("%j waits %j ms", (value, wait) => {
    assert.strictEqual(parseRetryAfter(value, now), wait)
  })

  it("round-trips any whole number of seconds, with leading zeros and optional whitespace", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 40 }),
        fc.nat(5),
        fc.constantFrom("", " ", "\t", "  "),
        nowArb,
        (seconds, zeros, space, at) => {
          const value = `${space}${"0".repeat(zeros)}${seconds}${space}`
          assert.strictEqual(parseRetryAfter(value, at), Math.min(seconds * second, saturatedWaitMs))
        }
      )
    )
  })

  it("saturates huge integers instead of overflowing, and the header cap applies", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(..."0123456789"), minLength: 16, maxLength: 400 }),
        fc.integer({ min: 1, max: 9 }),
        (digits, lead) => {
          const value = `${lead}${digits}`
          assert.strictEqual(parseRetryAfter(value, now), saturatedWaitMs)
          assert.strictEqual(retryAfterMillis({ "retry-after": value }, settings, now), 15 * minute)
        }
      )
    )
    assert.strictEqual(parseRetryAfter("9".repeat(100_000), now), saturatedWaitMs)
    assert.strictEqual(parseRetryAfter(`${"0".repeat(50)}42`, now), 42 * second)
  })
})

describe("parseHttpDate (RFC 7231 7.1.1.1)", () => {
  it("reads RFC 7231's example in all three forms", () => {
    const at = Date.UTC(2026, 0, 1)
    assert.strictEqual(parseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT", at), example)
    assert.strictEqual(parseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT", Date.UTC(1994, 0, 1)), example)
    assert.strictEqual(parseHttpDate("Sun Nov  6 08:49:37 1994", at), example)
    assert.strictEqual(parseHttpDate("Sun Nov 06 08:49:37 1994", at), example)
  })

  it("puts an RFC 850 two-digit year more than 50 years ahead in the past century", () => {
    const at = Date.UTC(2026, 5, 1)
    assert.strictEqual(parseHttpDate("Wednesday, 01-Jan-76 00:00:00 GMT", at), Date.UTC(2076, 0, 1))
    assert.strictEqual(parseHttpDate("Saturday, 01-Jan-77 00:00:00 GMT", at), Date.UTC(1977, 0, 1))
    assert.strictEqual(parseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT", at), example)
    assert.strictEqual(parseHttpDate("Friday, 01-Jan-27 00:00:00 GMT", at), Date.UTC(2027, 0, 1))
  })

  it("accepts a leap second as the next minute's start", () => {
    assert.strictEqual(parseHttpDate("Sat, 31 Dec 2016 23:59:60 GMT", now), Date.UTC(2017, 0, 1))
  })

  it("round-trips IMF-fixdate and asctime for every whole-second instant of years 1000..9999", () => {
    fc.assert(
      fc.property(httpInstant, nowArb, (instant, at) => {
        assert.strictEqual(parseHttpDate(imfFixdate(instant), at), instant)
        assert.strictEqual(parseHttpDate(asctime(instant), at), instant)
      })
    )
  })

  it("round-trips RFC 850 within 48 years either side of now", () => {
    fc.assert(
      fc.property(nowArb, fc.integer({ min: Math.ceil(-48 * year), max: Math.floor(48 * year) }), (at, offset) => {
        const instant = Math.floor((at + offset) / second) * second
        assert.strictEqual(parseHttpDate(rfc850(instant), at), instant)
      })
    )
  })

  it.each([
    "Sun, 31 Nov 1994 08:49:37 GMT",
    "Sun, 29 Feb 1900 08:49:37 GMT",
    "Sun, 06 Nov 1994 24:00:00 GMT",
    "Sun, 06 Nov 1994 08:60:00 GMT",
    "Sun, 06 Nov 1994 08:49:61 GMT",
    "Sun, 00 Nov 1994 08:49:37 GMT",
    "Sun, 6 Nov 1994 08:49:37 GMT",
    "Sun, 06 Nov 94 08:49:37 GMT",
    "Sun, 06 Nov 1994 08:49:37 UTC",
    "Sun, 06 Nov 1994 08:49:37 +0000",
    "Sun, 06 Nov 1994 08:49:37",
    "Sunday, 06 Nov 1994 08:49:37 GMT",
    "Sun, 06-Nov-94 08:49:37 GMT",
    "Sun Nov  6 08:49:37 94",
    "Sun Nov 6 08:49:37 1994",
    "Xyz, 06 Nov 1994 08:49:37 GMT",
    "Sun, 06 Foo 1994 08:49:37 GMT"
  ])("rejects %j", (text) => {
    assert.strictEqual(parseHttpDate(text, now), undefined)
    assert.strictEqual(parseRetryAfter(text, now), undefined)
  })
})

describe("parseIsoTimestamp (ISO 8601)", () => {
  it.each([
    ["1994-11-06T08:49:37Z", example],
    ["1994-11-06t08:49:37z", example],
    ["1994-11-06 08:49:37Z", example],
    ["1994-11-06T08:49:37.000Z", example],
    ["1994-11-06T08:49:37,5Z", example + 500],
    ["1994-11-06T08:49:37.0001Z", example + 1],
    ["1994-11-06T10:49:37+02:00", example],
    ["1994-11-06T10:49:37+0200", example],
    ["1994-11-06T10:49:37+02", example],
    ["1994-11-06T03:19:37-05:30", example],
    ["1994-11-06T08:49:37-00:00", example],
    ["1994-11-06T08:49Z", example - 37 * second],
    ["19941106T084937Z", example],
    ["19941106T104937+0200", example],
    ["+001994-11-06T08:49:37Z", example],
    ["+275760-09-13T00:00:00Z", 8.64e15],
    ["-271821-04-20T00:00:00Z", -8.64e15]
  ])("reads %j", (text, instant) => {
    assert.strictEqual(parseIsoTimestamp(text), instant)
  })

  it.each([
    "1994-11-06T08:49:37",
    "1994-11-06",
    "1994-11-06T24:00:00Z",
    "1994-02-29T00:00:00Z",
    "1994-13-01T00:00:00Z",
    "1994-11-06T08:49:37+24:00",
    "1994-11-06T08:49:37+02:60",
    "1994-11-06T08:49:37.Z",
    "94-11-06T08:49:37Z",
    "+1994-11-06T08:49:37Z",
    "+275760-09-13T00:00:00.001Z",
    "+275761-01-01T00:00:00Z",
    "-271821-04-19T23:59:59Z",
    "+999999-12-31T23:59:59Z"
  ])("rejects %j", (text) => {
    assert.strictEqual(parseIsoTimestamp(text), undefined)
    assert.strictEqual(parseRetryAfter(text, now), undefined)
  })

  it("round-trips toISOString over ECMAScript's whole time range", () => {
    fc.assert(
      fc.property(anyInstant, (instant) => {
        assert.strictEqual(parseIsoTimestamp(new Date(instant).toISOString()), instant)
      })
    )
  })

  it("round-trips any UTC offset", () => {
    fc.assert(
      fc.property(
        httpInstant,
        fc.integer({ min: 0, max: 999 }),
        fc.integer({ min: -1439, max: 1439 }),
        (s, ms, off) => {
          assert.strictEqual(parseIsoTimestamp(isoWithOffset(s + ms, off)), s + ms)
        }
      )
    )
  })

  it("is unparseable past year 275760", () => {
    fc.assert(
      fc.property(fc.integer({ min: 275_761, max: 999_999 }), fc.constantFrom("+", "-"), (y, sign) => {
        assert.strictEqual(parseRetryAfter(`${sign}${y}-01-01T00:00:00Z`, now), undefined)
      })
    )
  })
})

describe("parseRetryAfter: dates relative to now", () => {
  const formats = fc.constantFrom(imfFixdate, asctime, (ms: number) => new Date(ms).toISOString())

  it("waits from now until a future date, in whole milliseconds; a past date is 0", () => {
    assert.strictEqual(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", example - 37_250), 37_250)
    assert.strictEqual(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", example + 1), 0)
    assert.strictEqual(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", example), 0)
    fc.assert(
      fc.property(httpInstant, nowArb, formats, (instant, at, format) => {
        assert.strictEqual(parseRetryAfter(format(instant), at), Math.min(Math.max(0, instant - at), saturatedWaitMs))
      })
    )
  })

  it("round-trips RFC 850 dates near now", () => {
    fc.assert(
      fc.property(nowArb, fc.integer({ min: -40 * 86_400, max: 40 * 86_400 }), (at, offsetSeconds) => {
        const instant = Math.floor(at / second) * second + offsetSeconds * second
        assert.strictEqual(parseRetryAfter(rfc850(instant), at), Math.max(0, instant - at))
      })
    )
  })

  it("gives 0 for every past date", () => {
    fc.assert(
      fc.property(anyInstant, nowArb, (instant, at) => {
        fc.pre(instant <= at)
        assert.strictEqual(parseRetryAfter(new Date(instant).toISOString(), at), 0)
      })
    )
  })

  it("caps far-future dates at max_retry_after", () => {
    fc.assert(
      fc.property(httpInstant, formats, (instant, format) => {
        fc.pre(instant >= now + 15 * minute)
        assert.strictEqual(retryAfterMillis({ "retry-after": format(instant) }, settings, now), 15 * minute)
      })
    )
    assert.strictEqual(parseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", now), saturatedWaitMs)
    assert.strictEqual(parseRetryAfter("+275760-09-13T00:00:00Z", now), saturatedWaitMs)
  })
})

describe("parseRetryAfter: garbage", () => {
  it.each(["", " ", "-1", "+5", "1.5", "1e3", "0x10", "NaN", "Infinity", "5 s", "5s", "tomorrow", "1,2"])(
    "%j is unparseable",
    (value) => {
      assert.strictEqual(parseRetryAfter(value, now), undefined)
    }
  )

  it("never throws; a result is a whole number of milliseconds in range", () => {
    fc.assert(
      fc.property(fc.oneof(hostileText, fc.string(), fc.string({ unit: "binary" })), nowArb, (value, at) => {
        const wait = parseRetryAfter(value, at)
        assert.isTrue(wait === undefined || (Number.isSafeInteger(wait) && wait >= 0 && wait <= saturatedWaitMs))
      })
    )
  })

  it("is unparseable once junk surrounds a valid value", () => {
    const valid = fc.oneof(
      fc.nat().map(String),
      httpInstant.map(imfFixdate),
      httpInstant.map(asctime),
      httpInstant.map((ms) => new Date(ms).toISOString())
    )
    fc.assert(
      fc.property(valid, junk, fc.boolean(), (value, extra, before) => {
        assert.strictEqual(parseRetryAfter(before ? extra + value : value + extra, now), undefined)
      })
    )
  })

  it("stays unparseable, without backtracking, for long whitespace runs around junk", () => {
    const spaces = " \t".repeat(50_000)
    assert.strictEqual(parseRetryAfter(`${spaces}x${spaces}`, now), undefined)
    assert.strictEqual(parseRetryAfter(`${spaces}5${spaces}`, now), 5 * second)
  })

  it("is unparseable for a value that is not a string at run time", () => {
    for (const value of [undefined, null, 5, {}, ["5"]]) {
      assert.strictEqual(parseRetryAfter(value as unknown as string, now), undefined)
    }
  })
})

describe("retryAfterMillis (spec 2.9 retry_after_headers)", () => {
  const two = { retryAfterHeaders: ["X-Retry-In", "Retry-After"], maxRetryAfterMs: 15 * minute }

  it("reads the configured headers in order; the first parseable value wins", () => {
    assert.strictEqual(retryAfterMillis({ "x-retry-in": "3", "retry-after": "5" }, two, now), 3 * second)
    assert.strictEqual(retryAfterMillis({ "x-retry-in": "soon", "retry-after": "5" }, two, now), 5 * second)
    assert.strictEqual(retryAfterMillis({ "retry-after": ["soon", "7"] }, settings, now), 7 * second)
    assert.strictEqual(retryAfterMillis({ "retry-after": "0" }, settings, now), 0)
  })

  it("matches header names without regard to case", () => {
    assert.strictEqual(retryAfterMillis({ "Retry-After": "5" }, settings, now), 5 * second)
    assert.strictEqual(
      retryAfterMillis({ "RETRY-AFTER": "5" }, { ...settings, retryAfterHeaders: ["retry-after"] }, now),
      5 * second
    )
  })

  it("reads Effect's response headers", () => {
    const headers = Headers.fromInput({ "X-Retry-In": "soon", "Retry-After": "Sun, 06 Nov 1994 08:49:37 GMT" })
    assert.strictEqual(retryAfterMillis(headers, two, example - 12 * second), 12 * second)
  })

  it("ignores headers that are not configured; none parseable is undefined", () => {
    assert.strictEqual(
      retryAfterMillis({ "retry-after": "5" }, { ...settings, retryAfterHeaders: ["X-Retry-In"] }, now),
      undefined
    )
    assert.strictEqual(retryAfterMillis({ "retry-after": "soon", other: "5" }, settings, now), undefined)
    assert.strictEqual(retryAfterMillis({ "retry-after": undefined }, settings, now), undefined)
    assert.strictEqual(retryAfterMillis({}, settings, now), undefined)
  })

  it("caps the wait at max_retry_after", () => {
    assert.strictEqual(retryAfterMillis({ "retry-after": "3600" }, settings, now), 15 * minute)
    assert.strictEqual(retryAfterMillis({ "retry-after": "900" }, settings, now), 15 * minute)
    assert.strictEqual(retryAfterMillis({ "retry-after": "899" }, settings, now), 899 * second)
    fc.assert(
      fc.property(fc.nat(), fc.integer({ min: 1, max: 86_400_000 }), (seconds, cap) => {
        const wait = retryAfterMillis({ "retry-after": String(seconds) }, { ...settings, maxRetryAfterMs: cap }, now)
        assert.strictEqual(wait, Math.min(seconds * second, cap))
      })
    )
  })
})
