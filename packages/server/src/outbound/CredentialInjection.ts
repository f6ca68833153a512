/**
 * Places a connection's credentials where its connector's auth method says (spec 4.2,
 * SECURITY.md): runs after anything that records the request, strips the caller's own
 * `Authorization`, `Proxy-Authorization`, the method's header and every `X-Svc-*` header. Pure.
 */
import type { ConnectorAuth, StoredCredentials } from "@svc/domain/ConnectorAuth"

/** The part of a request credentials are injected into. */
export interface InjectionTarget {
  readonly url: URL
  readonly headers: Readonly<Record<string, string>>
}

/** Header names (lower case) and query parameters an auth method sets. */
export interface InjectionPlaces {
  readonly headers: ReadonlyArray<string>
  readonly queryParams: ReadonlyArray<string>
}

/** A new request with credentials in place, and exactly where they went. */
export interface InjectedRequest {
  readonly url: URL
  readonly headers: Record<string, string>
  readonly injected: InjectionPlaces
}

/**
 * The stored credentials do not fit the auth method (a defect of our own data: a connection left
 * on credentials of another method, or none where some are needed). Thrown; never carries a secret.
 */
export class CredentialInjectionError extends Error {
  readonly reason: "credentials_missing" | "credentials_kind_mismatch" | "credential_not_header_safe"
  constructor(reason: CredentialInjectionError["reason"], message: string) {
    super(message)
    this.name = "CredentialInjectionError"
    this.reason = reason
  }
}

/** Where `auth` puts credentials: what recorders must redact besides the always-redacted headers. */
export const redactionTargets = (auth: ConnectorAuth): InjectionPlaces => {
  switch (auth.type) {
    case "none":
      return { headers: [], queryParams: [] }
    case "api_key":
      switch (auth.placement) {
        case "bearer":
          return { headers: ["authorization"], queryParams: [] }
        case "header":
          return { headers: [auth.header_name.toLowerCase()], queryParams: [] }
        case "query":
          return { headers: [], queryParams: [auth.query_param] }
      }
      break
    case "basic":
    case "oauth2":
      return { headers: ["authorization"], queryParams: [] }
  }
}

const alwaysStripped: ReadonlySet<string> = new Set(["authorization", "proxy-authorization"])

const headerSafe = (value: string): boolean => /^[\t\x20-\x7e\x80-\xff]*$/.test(value)

const tokenChars = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/

/** `Bearer` for any casing of "bearer" (RFC 6750); another valid scheme token as given; else `Bearer`. */
const authScheme = (tokenType: string): string =>
  tokenType.toLowerCase() === "bearer" || !tokenChars.test(tokenType) ? "Bearer" : tokenType

const form = (text: string): string => encodeURIComponent(text)

/** The decoded name of one `name=value` query pair (`+` is a space; malformed escapes stay as written). */
export const decodedName = (pair: string): string => {
  const raw = pair.includes("=") ? pair.slice(0, pair.indexOf("=")) : pair
  try {
    return decodeURIComponent(raw.replaceAll("+", " "))
  } catch {
    return raw
  }
}

/** Replaces every `name` parameter with one carrying `value`, leaving the others' encoding untouched. */
const withQueryParam = (url: URL, name: string, value: string): URL => {
  const copy = new URL(url.href)
  const kept = copy.search
    .slice(1)
    .split("&")
    .filter((pair) => pair !== "" && decodedName(pair) !== name)
  copy.search = [...kept, `${form(name)}=${form(value)}`].join("&")
  return copy
}

const credentialValue = (
  auth: ConnectorAuth,
  credentials: StoredCredentials | undefined
): { readonly header: string; readonly value: string } | { readonly query: string; readonly value: string } => {
  const mismatch = (expected: string) =>
    credentials === undefined
      ? new CredentialInjectionError("credentials_missing", `auth method ${auth.type} needs ${expected} credentials`)
      : new CredentialInjectionError(
          "credentials_kind_mismatch",
          `auth method ${auth.type} needs ${expected} credentials, the connection holds ${credentials.kind}`
        )
  switch (auth.type) {
    case "none":
      throw new CredentialInjectionError("credentials_kind_mismatch", "auth method none sets nothing")
    case "api_key": {
      if (credentials?.kind !== "api_key") throw mismatch("api_key")
      const key = credentials.api_key
      switch (auth.placement) {
        case "bearer":
          return { header: "authorization", value: `Bearer ${key}` }
        case "header":
          return { header: auth.header_name.toLowerCase(), value: `${auth.prefix ?? ""}${key}` }
        case "query":
          return { query: auth.query_param, value: key }
      }
      break
    }
    case "basic": {
      if (credentials?.kind !== "basic") throw mismatch("basic")
      const encoded = Buffer.from(`${credentials.username}:${credentials.password}`, "utf8").toString("base64")
      return { header: "authorization", value: `Basic ${encoded}` }
    }
    case "oauth2": {
      const expected =
        auth.grant_type === "client_credentials" ? "oauth2_client_credentials" : "oauth2_authorization_code"
      if (credentials?.kind !== expected) throw mismatch(expected)
      return {
        header: "authorization",
        value: `${authScheme(credentials.token.token_type)} ${credentials.token.access_token}`
      }
    }
  }
}

/**
 * Why `credentials` cannot go where `auth` puts them (a header value holding CR, LF, another
 * control character or a character outside Latin-1), or `undefined` when they can. Checked when
 * credentials are accepted, so a stored connection never fails injection on every call.
 */
export const placementProblem = (auth: ConnectorAuth, credentials: StoredCredentials): string | undefined => {
  if (auth.type === "none") return undefined
  let placed: ReturnType<typeof credentialValue>
  try {
    placed = credentialValue(auth, credentials)
  } catch (error) {
    if (error instanceof CredentialInjectionError) return error.message
    throw error
  }
  if ("query" in placed || headerSafe(placed.value)) return undefined
  return `cannot be sent in the ${placed.header} header: it holds a control character (such as CR or LF) or a character outside Latin-1`
}

/**
 * A copy of `request` with the connection's credentials injected; the input is not mutated.
 * Throws `CredentialInjectionError` when the credentials do not fit `auth` (treat as a defect).
 */
export const injectCredentials = (
  auth: ConnectorAuth,
  credentials: StoredCredentials | undefined,
  request: InjectionTarget
): InjectedRequest => {
  const own = auth.type === "api_key" && auth.placement === "header" ? auth.header_name.toLowerCase() : undefined
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(request.headers)) {
    const lower = name.toLowerCase()
    if (alwaysStripped.has(lower) || lower === own || lower.startsWith("x-svc-")) continue
    headers[name] = value
  }
  if (auth.type === "none") {
    return { url: new URL(request.url.href), headers, injected: { headers: [], queryParams: [] } }
  }
  const placed = credentialValue(auth, credentials)
  if ("query" in placed) {
    return {
      url: withQueryParam(request.url, placed.query, placed.value),
      headers,
      injected: { headers: [], queryParams: [placed.query] }
    }
  }
  if (!headerSafe(placed.value)) {
    throw new CredentialInjectionError(
      "credential_not_header_safe",
      `the ${placed.header} value has a control character`
    )
  }
  headers[placed.header] = placed.value
  return { url: new URL(request.url.href), headers, injected: { headers: [placed.header], queryParams: [] } }
}
