/**
 * The return-URL policy of the public service's browser flows (SECURITY.md): an absolute http(s)
 * URL whose origin is exactly one of `host_application.allowed_origins` or the public base URL's,
 * with no userinfo, whitespace, control characters or backslashes.
 */
import { BadRequest } from "@svc/domain/Errors"
import { Effect } from "effect"

/** What the return-URL allowlist reads; a `ResolvedConfig` fits. */
export interface ReturnUrlPolicy {
  readonly hostApplication: { readonly allowed_origins?: ReadonlyArray<string> | undefined }
  readonly publicService: { readonly baseUrl: string }
}

/** True when `text` has whitespace, a backslash or a control character (never in a URL we redirect to). */
const hasUnsafeCharacter = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c <= 0x20 || c === 0x7f || c === 0x5c || (c >= 0x80 && /\s/.test(text[i]!))) return true
  }
  return false
}

/** The origin of an absolute http(s) URL without userinfo, else undefined. */
const httpOrigin = (text: string): string | undefined => {
  if (!/^https?:\/\//i.test(text)) return undefined
  if (!URL.canParse(text)) return undefined
  const url = new URL(text)
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined
  if (url.username !== "" || url.password !== "") return undefined
  return url.origin
}

/** The allowed origins, normalised (`host_application.allowed_origins` plus the public base URL's origin). */
export const allowedOrigins = (policy: ReturnUrlPolicy): ReadonlySet<string> => {
  const origins = new Set<string>()
  for (const entry of [...(policy.hostApplication.allowed_origins ?? []), policy.publicService.baseUrl]) {
    const origin = httpOrigin(entry.trim())
    if (origin !== undefined) origins.add(origin)
  }
  return origins
}

/**
 * The normalised URL to redirect to when `text` is an absolute http(s) URL, without userinfo,
 * whitespace, control characters or backslashes, whose origin is exactly an allowed one; else
 * undefined. Relative, protocol-relative and non-http(s) strings are never allowed.
 */
export const allowedReturnUrl = (text: string, policy: ReturnUrlPolicy): string | undefined => {
  if (text.length > 2048 || hasUnsafeCharacter(text)) return undefined
  const origin = httpOrigin(text)
  if (origin === undefined || !allowedOrigins(policy).has(origin)) return undefined
  return new URL(text).href
}

/**
 * {@link allowedReturnUrl}, except that an absolute path (`/x`, never `//x` or `/\x`) is first
 * resolved against the public service's own origin: the form `cli sign-marketplace-login-url
 * --returnTo /path` produces.
 */
export const resolveReturnUrl = (text: string, policy: ReturnUrlPolicy): string | undefined => {
  if (!/^\/(?![/\\])/.test(text)) return allowedReturnUrl(text, policy)
  const base = httpOrigin(policy.publicService.baseUrl)
  if (base === undefined || hasUnsafeCharacter(text)) return undefined
  return allowedReturnUrl(new URL(text, base).href, policy)
}

/** True when {@link allowedReturnUrl} accepts `text`. */
export const isAllowedReturnUrl = (text: string, policy: ReturnUrlPolicy): boolean =>
  allowedReturnUrl(text, policy) !== undefined

/** Nothing for an absent or allowed `url`; else 400 `return_url_not_allowed` naming `field`. */
export const checkReturnUrl = (
  url: string | undefined,
  field: string,
  policy: ReturnUrlPolicy
): Effect.Effect<void, BadRequest> =>
  url === undefined || isAllowedReturnUrl(url, policy)
    ? Effect.void
    : Effect.fail(
        new BadRequest({
          error: "returnToUrl must be on an origin listed in host_application.allowed_origins",
          code: "return_url_not_allowed",
          details: [{ field, message: "origin is not allowed" }]
        })
      )
