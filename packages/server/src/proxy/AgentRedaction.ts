/**
 * What an agent must never get back: the values of the connection's credentials, in any of the
 * forms an upstream may echo them — as stored, URL-encoded (a query-placed key in a `next` link or
 * a `Location`), form-encoded, and JSON-escaped (`\/` and `\u002B` from PHP or .NET encoders,
 * which `JSON.parse` would turn back into the plain value). Pure.
 */
import type { StoredCredentials } from "@svc/domain/ConnectorAuth"

/** What replaces a credential's value in anything returned to an agent. */
export const redactedMarker = "[redacted by svc]"

/** Credential fields that are identifiers, not secrets (a username is shown to the user anyway). */
const notSecret = new Set(["kind", "username", "client_id", "token_type", "scope"])

/** The strings of the credentials an upstream could echo (the basic pair also as its header form). */
const plainSecrets = (credentials: StoredCredentials | undefined): ReadonlyArray<string> => {
  if (credentials === undefined) return []
  const out: Array<string> = []
  const walk = (value: unknown, key: string) => {
    if (typeof value === "string") {
      if (value.length >= 6 && !notSecret.has(key)) out.push(value)
    } else if (typeof value === "object" && value !== null) {
      for (const [k, v] of Object.entries(value)) walk(v, k)
    }
  }
  walk(credentials, "")
  if (credentials.kind === "basic") {
    out.push(Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64"))
  }
  return out
}

const unicodeEscaped = (secret: string, hex: (code: string) => string) =>
  secret.replace(/[^A-Za-z0-9]/g, (c) => `\\u${hex(c.charCodeAt(0).toString(16).padStart(4, "0"))}`)

/** Every form of `secret` an upstream may write, longest first (a longer form is replaced whole). */
const formsOf = (secret: string): ReadonlyArray<string> => {
  const urlEncoded = encodeURIComponent(secret)
  return [
    secret,
    urlEncoded,
    urlEncoded.replace(/%20/g, "+"),
    urlEncoded.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()),
    JSON.stringify(secret).slice(1, -1),
    secret.replace(/\//g, "\\/"),
    unicodeEscaped(secret, (h) => h.toUpperCase()),
    unicodeEscaped(secret, (h) => h.toLowerCase())
  ]
}

/** The forms to replace for these credentials (those of every set given: before and after a refresh). */
export const secretsOf = (credentials: ReadonlyArray<StoredCredentials | undefined>): ReadonlyArray<string> =>
  [...new Set(credentials.flatMap(plainSecrets).flatMap(formsOf))].sort((a, b) => b.length - a.length)

/** `text` with every form of every secret replaced by the marker. */
export const redact = (text: string, secrets: ReadonlyArray<string>): string => {
  let out = text
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(redactedMarker)
  return out
}

/** A parsed JSON value with every string (and key) redacted: what an escape hid in the text is plain here. */
export const redactJson = (value: unknown, secrets: ReadonlyArray<string>): unknown => {
  if (typeof value === "string") return redact(value, secrets)
  if (Array.isArray(value)) return value.map((item) => redactJson(item, secrets))
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [redact(k, secrets), redactJson(v, secrets)]))
  }
  return value
}
