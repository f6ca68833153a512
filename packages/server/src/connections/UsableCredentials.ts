/**
 * When stored OAuth2 credentials need a new token (spec 8.3), as pure functions of the definition,
 * the token set and the clock: the proactive refresh time that both a request and the background
 * sweep use, and the retry time after a transient refresh failure. Other auth methods never do.
 */
import type { OAuth2TokenSet, StoredCredentials } from "@svc/domain/ConnectorAuth"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { parseDuration } from "@svc/domain/Duration"
import { hasRefreshToken } from "../oauth/Refresh.ts"

/** Stored credentials that hold an OAuth2 token set. */
export type OAuth2Credentials = Extract<StoredCredentials, { readonly token: OAuth2TokenSet }>

/** A client-credentials token is re-fetched when it expires within this window. */
export const clientCredentialsWindowMs = 60_000

/** The refresh window of an authorization-code definition when `before_expiry` does not parse. */
const defaultBeforeExpiryMs = 5 * 60_000

/** The first retry after a transient failure, and the longest wait between retries. */
export const retryMinMs = 30_000
export const retryMaxMs = 10 * 60_000

/** Whether `credentials` hold an OAuth2 token set. */
export const isOAuth2 = (credentials: StoredCredentials | undefined): credentials is OAuth2Credentials =>
  credentials?.kind === "oauth2_authorization_code" || credentials?.kind === "oauth2_client_credentials"

/**
 * How long before expiry `credentials` are refreshed under `definition`, or null when they cannot
 * be: not OAuth2, a grant that does not match the definition, or an authorization-code token
 * without a refresh token or with refresh disabled. Client credentials can always be re-fetched.
 */
const refreshWindowMs = (definition: ConnectorDefinition, credentials: StoredCredentials | undefined) => {
  const auth = definition.auth
  if (auth.type !== "oauth2" || credentials === undefined) return null
  if (credentials.kind === "oauth2_client_credentials") {
    return auth.grant_type === "client_credentials" ? clientCredentialsWindowMs : null
  }
  if (credentials.kind !== "oauth2_authorization_code" || auth.grant_type !== "authorization_code") return null
  if (!auth.refresh.enabled || !hasRefreshToken(credentials.token)) return null
  return parseDuration(auth.refresh.before_expiry) ?? defaultBeforeExpiryMs
}

/**
 * When the token of `credentials` should be refreshed (spec 8.3), or null when there is nothing to
 * refresh. With an `expires_at`: that time minus the refresh window, the window capped at half the
 * token's lifetime (a provider handing out 5-minute tokens with a 5-minute window would otherwise
 * make every token due at once). Without one: `obtained_at` plus `defaultLifetimeMs` (a token set
 * stored before `obtained_at` existed is due at once).
 */
export const dueAt = (
  definition: ConnectorDefinition,
  credentials: StoredCredentials | undefined,
  defaultLifetimeMs: number
): Date | null => {
  const windowMs = refreshWindowMs(definition, credentials)
  if (windowMs === null || !isOAuth2(credentials)) return null
  const { expires_at: expiresAt, obtained_at: obtainedAt } = credentials.token
  if (expiresAt === undefined) return new Date((obtainedAt ?? 0) + defaultLifetimeMs)
  const lifetime = obtainedAt === undefined ? Number.POSITIVE_INFINITY : Math.max(0, expiresAt - obtainedAt)
  return new Date(expiresAt - Math.min(windowMs, lifetime / 2))
}

/** Whether the token of `credentials` is due for refresh at `now` (epoch ms). */
export const isDue = (
  definition: ConnectorDefinition,
  credentials: StoredCredentials | undefined,
  defaultLifetimeMs: number,
  now: number
): boolean => {
  const due = dueAt(definition, credentials, defaultLifetimeMs)
  return due !== null && due.getTime() <= now
}

/** Whether the access token of `credentials` has expired at `now` (unknown expiry: not expired). */
export const isExpired = (credentials: OAuth2Credentials, now: number): boolean =>
  credentials.token.expires_at !== undefined && credentials.token.expires_at <= now

/**
 * The next sweep time after a transient failure at `now`: as long again as the token has been due
 * (so retries double), at least `retryMinMs`, at most `retryMaxMs`.
 */
export const retryAt = (due: Date | null, now: number): Date => {
  const overdue = due === null ? 0 : now - due.getTime()
  return new Date(now + Math.min(retryMaxMs, Math.max(retryMinMs, overdue)))
}
