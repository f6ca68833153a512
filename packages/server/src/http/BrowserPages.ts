/**
 * Building blocks of the public service's browser routes (marketplace login, OAuth2 callbacks):
 * `Set-Cookie` strings, minimal HTML pages and redirects, all with the no-store / no-referrer /
 * no-framing headers a credential-bearing browser response needs (SECURITY.md). Request cookies
 * are read with `request.cookies` (effect's `Cookies.parseHeader`: first occurrence wins, quotes
 * removed, `__proto__` an own key, never the prototype).
 */
import { Layer } from "effect"
import { Cookies, HttpServerResponse, UrlParams } from "effect/http"

/** Name of the HttpOnly cookie that carries the browser session id. */
export const sessionCookieName = "svc_session"

/** Name of the script-readable cookie that carries the XSRF token. */
export const xsrfCookieName = "XSRF-TOKEN"

/** Request header in which the front end echoes the XSRF token (lowercase, as Node delivers it). */
export const xsrfHeaderName = "x-xsrf-token"

/** Headers of every browser response: never cached, never framed, never a Referer. */
export const browserSecurityHeaders: Readonly<Record<string, string>> = {
  "Cache-Control": "no-store",
  "Referrer-Policy": "no-referrer",
  "X-Frame-Options": "DENY",
  "X-Content-Type-Options": "nosniff"
}

/** Attributes of a `Set-Cookie` string built by {@link serializeCookie}. */
export interface CookieAttributes {
  readonly httpOnly: boolean
  readonly secure: boolean
  /** Seconds until expiry; 0 deletes the cookie; absent makes a browser-session cookie. */
  readonly maxAgeSeconds?: number | undefined
  readonly sameSite?: "Lax" | "Strict" | "None" | undefined
  readonly path?: string | undefined
}

const cookieNamePattern = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const cookieValuePattern = /^[\x21\x23-\x2B\x2D-\x3A\x3C-\x5B\x5D-\x7E]*$/
const cookiePathPattern = /^\/[\x20-\x3A\x3C-\x7E]*$/

/**
 * One `Set-Cookie` value: `name=value; Max-Age=…; Path=…; HttpOnly; Secure; SameSite=…`
 * (SameSite defaults to Lax, Path to `/`). An invalid name, value or path is a defect.
 */
export const serializeCookie = (name: string, value: string, attributes: CookieAttributes): string => {
  if (!cookieNamePattern.test(name)) throw new RangeError("invalid cookie name")
  if (!cookieValuePattern.test(value)) throw new RangeError(`invalid value for cookie ${name}`)
  const path = attributes.path ?? "/"
  if (!cookiePathPattern.test(path)) throw new RangeError(`invalid path for cookie ${name}`)
  let out = `${name}=${value}`
  if (attributes.maxAgeSeconds !== undefined) out += `; Max-Age=${Math.max(0, Math.floor(attributes.maxAgeSeconds))}`
  out += `; Path=${path}`
  if (attributes.httpOnly) out += "; HttpOnly"
  if (attributes.secure) out += "; Secure"
  out += `; SameSite=${attributes.sameSite ?? "Lax"}`
  return out
}

/** True when the public service's external base URL is https, i.e. cookies must be `Secure`. */
export const isSecureBaseUrl = (baseUrl: string): boolean => {
  try {
    return new URL(baseUrl).protocol === "https:"
  } catch {
    return false
  }
}

/** The `svc_session` cookie: HttpOnly, SameSite=Lax, Path=/, Secure when `secure`. */
export const sessionCookie = (sessionId: string, maxAgeSeconds: number, secure: boolean): string =>
  serializeCookie(sessionCookieName, sessionId, { httpOnly: true, secure, maxAgeSeconds })

/** The `XSRF-TOKEN` cookie: like the session cookie but readable by scripts, so a front end can echo it. */
export const xsrfCookie = (xsrfToken: string, maxAgeSeconds: number, secure: boolean): string =>
  serializeCookie(xsrfCookieName, xsrfToken, { httpOnly: false, secure, maxAgeSeconds })

/** A `Set-Cookie` value deleting cookie `name` (empty value, Max-Age=0, same Path/SameSite). */
export const clearCookie = (name: string, options: { readonly httpOnly: boolean; readonly secure: boolean }): string =>
  serializeCookie(name, "", { ...options, maxAgeSeconds: 0 })

/** `Set-Cookie` values deleting both session cookies. */
export const clearSessionCookies = (secure: boolean): ReadonlyArray<string> => [
  clearCookie(sessionCookieName, { httpOnly: true, secure }),
  clearCookie(xsrfCookieName, { httpOnly: false, secure })
]

/** Adds `Set-Cookie` values (as built by {@link serializeCookie}) to a response, one header each. */
export const withSetCookies = (
  response: HttpServerResponse.HttpServerResponse,
  setCookies: ReadonlyArray<string>
): HttpServerResponse.HttpServerResponse => HttpServerResponse.mergeCookies(response, Cookies.fromSetCookie(setCookies))

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) =>
    c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : c === '"' ? "&quot;" : "&#39;"
  )

/**
 * A minimal HTML page (title and one paragraph, both escaped) with no scripts, styles or
 * subresources allowed (`Content-Security-Policy: default-src 'none'`), not cached, not framable.
 */
export const htmlPage = (status: number, title: string, message: string): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(
    `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>` +
      `<body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></body></html>\n`,
    {
      status,
      contentType: "text/html; charset=utf-8",
      headers: {
        ...browserSecurityHeaders,
        "Content-Security-Policy": "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
      }
    }
  )

/** A redirect (303 unless `status` says 302) that is not cached and sends no Referer. */
export const redirectTo = (
  url: string,
  options?: {
    readonly status?: 302 | 303 | undefined
    readonly headers?: Readonly<Record<string, string>> | undefined
  }
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.redirect(url, {
    status: options?.status ?? 303,
    headers: { "Cache-Control": "no-store", "Referrer-Policy": "no-referrer", ...options?.headers }
  })

/** Query parameters that carry credentials on the public service's browser routes. */
export const credentialQueryNames: ReadonlyArray<string> = ["token", "code", "state", "code_verifier", "ticket"]

/**
 * Redacts {@link credentialQueryNames} (besides Effect's defaults) from the URLs recorded on
 * server spans; provide it to the public service's server so a login token never reaches a trace.
 */
export const layerRedactCredentialQuery: Layer.Layer<never> = Layer.succeed(UrlParams.CurrentRedactedNames)([
  ...UrlParams.CurrentRedactedNames.defaultValue(),
  ...credentialQueryNames
])
