/**
 * Hostile input for tests of strict input handling: text PostgreSQL cannot store (NUL), text that
 * is not valid Unicode (lone surrogates), control characters and header injection, numeric edge
 * cases, path tricks and very long text, plus the percent-encoding a hostile client would send.
 */
import * as fc from "fast-check"

/** Hostile text: fixed cases, arbitrary UTF-16 and short runs of control characters. */
export const hostileText = fc.oneof(
  fc.constantFrom(
    "\u0000",
    "a\u0000b",
    "\ud800",
    "x\udfff",
    "\r\n",
    "\u001b[31m",
    "\u007f",
    "1e3",
    "0x10",
    " 1",
    "01",
    "-0",
    "NaN",
    "Infinity",
    "9007199254740993",
    "",
    "\udc00\ud800",
    "a\r\nX-Evil: 1",
    "1.0",
    "%",
    "../..",
    "x".repeat(5_000)
  ),
  fc.string({ unit: "binary", maxLength: 32 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0x1f }).map((c) => String.fromCharCode(c)), maxLength: 8 })
)

/** Percent-encodes every UTF-16 unit, a lone surrogate as its 3-byte WTF-8 form (as a hostile client would). */
export const wtf8PercentEncode = (text: string): string => {
  let out = ""
  for (const ch of text) {
    const cp = ch.codePointAt(0)!
    if (cp >= 0xd800 && cp <= 0xdfff) {
      out += [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join("")
    } else out += encodeURIComponent(ch)
  }
  return out
}
