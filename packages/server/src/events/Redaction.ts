/**
 * Redaction of a request recording before it is encrypted (SECURITY.md "Credentials never leave
 * where they belong"): the always-secret headers, the headers and query parameters an auth method
 * sets, URL user info, and every occurrence of the given secret values (also URL-, form- and
 * JSON-encoded) in header values, the URL and the bodies. Pure; never throws.
 */
import { decodedName, type InjectionPlaces } from "../outbound/CredentialInjection.ts"

/** What a redacted value reads as. */
export const redactedText = "[redacted]"

/** Headers never recorded with their values, whatever the auth method (request and response). */
export const alwaysRedactedHeaders: ReadonlyArray<string> = [
  "authorization",
  "proxy-authorization",
  "cookie",
  "set-cookie"
]

/** Header values as recorded: one string, or one per repeated header line. */
export interface RecordedHeaders {
  readonly [name: string]: string | ReadonlyArray<string>
}

const redactedBytes = new TextEncoder().encode(redactedText)
const encoder = new TextEncoder()

const lowerHex = (text: string) => text.replace(/%[0-9A-F]{2}/g, (hex) => hex.toLowerCase())

/** The spellings of `secret` a recording may hold: as is, URL-, form- and JSON-encoded. */
const spellings = (secret: string): ReadonlyArray<string> => {
  const uri = encodeURIComponent(secret)
  const variants = [
    secret,
    uri,
    lowerHex(uri),
    uri.replaceAll("%20", "+"),
    new URLSearchParams([["", secret]]).toString().slice(1),
    JSON.stringify(secret).slice(1, -1)
  ]
  return variants.filter((variant) => variant.length > 0)
}

const indexOfBytes = (haystack: Uint8Array, needle: Uint8Array, from: number): number =>
  Buffer.from(haystack.buffer, haystack.byteOffset, haystack.byteLength).indexOf(needle, from)

const replaceBytes = (bytes: Uint8Array, needle: Uint8Array): Uint8Array => {
  let at = indexOfBytes(bytes, needle, 0)
  if (at < 0) return bytes
  const parts: Array<Uint8Array> = []
  let from = 0
  while (at >= 0) {
    parts.push(bytes.subarray(from, at), redactedBytes)
    from = at + needle.byteLength
    at = indexOfBytes(bytes, needle, from)
  }
  parts.push(bytes.subarray(from))
  return new Uint8Array(Buffer.concat(parts))
}

const endsWithPrefixOf = (bytes: Uint8Array, needle: Uint8Array): number => {
  for (let k = Math.min(needle.byteLength - 1, bytes.byteLength); k >= 1; k--) {
    let match = true
    for (let i = 0; i < k; i++) {
      if (bytes[bytes.byteLength - k + i] !== needle[i]) {
        match = false
        break
      }
    }
    if (match) return k
  }
  return 0
}

/** A redactor for one recording. */
export interface Redactor {
  readonly headers: (headers: RecordedHeaders) => Record<string, string | Array<string>>
  readonly url: (url: string) => string
  /** `cut`: the body was truncated, so a secret may straddle its end: a trailing partial secret goes too. */
  readonly body: (bytes: Uint8Array, cut: boolean) => Uint8Array
}

/** Builds the redactor of a recording from the auth method's places and the secret values. */
export const makeRedactor = (places: InjectionPlaces, secrets: ReadonlyArray<string>): Redactor => {
  const names = new Set([...alwaysRedactedHeaders, ...places.headers.map((name) => name.toLowerCase())])
  const params = new Set(places.queryParams.map((name) => name.toLowerCase()))
  // Longest first, so a spelling that contains another is replaced whole.
  const texts = [...new Set(secrets.flatMap(spellings))].sort((a, b) => b.length - a.length)
  const needles = texts.map((text) => encoder.encode(text))

  const text = (value: string): string => {
    let out = value
    for (const secret of texts) if (out.includes(secret)) out = out.split(secret).join(redactedText)
    return out
  }

  const headers = (input: RecordedHeaders) => {
    const out: Record<string, string | Array<string>> = {}
    for (const [name, value] of Object.entries(input)) {
      const hidden = names.has(name.toLowerCase())
      const one = (v: string) => (hidden ? redactedText : text(v))
      out[text(name)] = typeof value === "string" ? one(value) : value.map(one)
    }
    return out
  }

  const url = (input: string): string => {
    const hashAt = input.indexOf("#")
    const beforeHash = hashAt < 0 ? input : input.slice(0, hashAt)
    const fragment = hashAt < 0 ? "" : input.slice(hashAt)
    const queryAt = beforeHash.indexOf("?")
    const base = (queryAt < 0 ? beforeHash : beforeHash.slice(0, queryAt)).replace(
      /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^@/?#]*@/,
      (_, scheme: string) => `${scheme}${redactedText}@`
    )
    const query =
      queryAt < 0
        ? ""
        : `?${beforeHash
            .slice(queryAt + 1)
            .split("&")
            .map((pair) => {
              if (!params.has(decodedName(pair).toLowerCase())) return pair
              const eq = pair.indexOf("=")
              return `${eq < 0 ? pair : pair.slice(0, eq)}=${redactedText}`
            })
            .join("&")}`
    return text(`${base}${query}${fragment}`)
  }

  const body = (bytes: Uint8Array, cut: boolean): Uint8Array => {
    let out = bytes
    for (const needle of needles) out = replaceBytes(out, needle)
    if (!cut) return out
    let tail = 0
    for (const needle of needles) tail = Math.max(tail, endsWithPrefixOf(out, needle))
    if (tail === 0) return out
    return new Uint8Array(Buffer.concat([out.subarray(0, out.byteLength - tail), redactedBytes]))
  }

  return { headers, url, body }
}
