/**
 * Reading an OAuth2 token endpoint response (RFC 6749 5.1, 5.2): JSON, or form data as some
 * providers (GitHub) answer; provider-supplied text made safe to log and show.
 */
import type { OutboundResponse } from "../outbound/Outbound.ts"

/** The token response members this service reads; absent when missing or of the wrong type. */
export interface TokenResponseFields {
  readonly access_token?: string
  readonly token_type?: string
  readonly expires_in?: number
  readonly refresh_token?: string
  readonly scope?: string
  readonly error?: string
  readonly error_description?: string
}

const header = (response: OutboundResponse, name: string): string => {
  const value = response.headers[name]
  return typeof value === "string" ? value : (value?.join(", ") ?? "")
}

const lifetime = (value: unknown): number | undefined => {
  if (typeof value === "number") return value
  if (typeof value === "string" && /^\d{1,12}(\.\d{1,6})?$/.test(value.trim())) return Number(value.trim())
  return undefined
}

/** The members of a JSON object or form-encoded body, or undefined when the body is neither. */
export const tokenResponseFields = (response: OutboundResponse): TokenResponseFields | undefined => {
  const text = new TextDecoder("utf-8", { fatal: false }).decode(response.body)
  let record: Record<string, unknown>
  if (header(response, "content-type").toLowerCase().includes("application/x-www-form-urlencoded")) {
    record = Object.fromEntries(new URLSearchParams(text))
  } else {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return undefined
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined
    record = parsed as Record<string, unknown>
  }
  const stringField = (name: string): string | undefined => {
    const value = record[name]
    return typeof value === "string" ? value : undefined
  }
  const expiresIn = lifetime(record.expires_in)
  const fields: Record<string, string | number> = {}
  for (const name of ["access_token", "token_type", "refresh_token", "scope", "error", "error_description"]) {
    const value = stringField(name)
    if (value !== undefined) fields[name] = value
  }
  if (expiresIn !== undefined) fields.expires_in = expiresIn
  return fields
}

/**
 * Provider text made safe: every secret blanked (before anything is cut), control characters
 * replaced, at most `max` (200) characters.
 */
export const scrubbed = (text: string, secrets: ReadonlyArray<string>, max = 200): string => {
  let out = text
  for (const secret of secrets) if (secret !== "") out = out.split(secret).join("[redacted]")
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  out = out.replace(/[\u0000-\u001f\u007f-\u009f]/g, " ")
  return out.length > max ? `${out.slice(0, max)}…` : out
}
