/** What the Connect UI's screens share: the API on the browser session, step ids, error wording. */
import { ApiError, hasFields, makeApi } from "../shared/api.ts"

export const api = makeApi("XSRF-TOKEN")
export const verifyStepId = "svc:verify"
export const returnPath = "/connect/oauth-return"

/** What the OAuth2 popup tells the page that opened it. */
export interface OAuthReturnMessage {
  readonly type: "svc:oauth-return"
  readonly connectionId: string | null
  readonly status: string | null
  readonly error: string | null
}

export const isOAuthReturn = (data: unknown): data is OAuthReturnMessage =>
  typeof data === "object" && data !== null && (data as { type?: unknown }).type === "svc:oauth-return"

export interface Session {
  readonly actorId: string
  readonly externalId: string
  readonly expiresAt: string
}

/** Whether an answer of `/marketplace/session` is a {@link Session}. */
export const isSession = hasFields<Session>({ actorId: "string", externalId: "string", expiresAt: "string" })

export const friendlyErrors: Readonly<Record<string, string>> = {
  access_denied: "You declined access at the provider.",
  token_exchange_failed: "The provider did not issue a token. Try again.",
  required_scope_not_granted: "The provider did not grant every permission the connection needs.",
  verification_failed: "The connection could not be verified with the provider.",
  invalid_credentials: "These credentials were not accepted.",
  invalid_configuration: "Some values are not valid.",
  into_namespace_required: "This account cannot choose where to create the connection; ask your administrator.",
  oauth2_client_not_configured: "This connector is not set up for sign-in yet; ask your administrator.",
  session_required: "Your session has ended. Open this page again from the application."
}

/**
 * What an end user reads for a failed call: the wording of a known code, else a generic sentence
 * with the code. The server's own message can name provider internals (host names, socket
 * errors); those stay in the admin UI's views.
 */
export const messageOf = (error: unknown): string => {
  if (error instanceof ApiError) {
    const known = friendlyErrors[error.code]
    return known !== undefined
      ? `${known} (${error.code})`
      : `Something went wrong. Try again, or contact the application's support. (${error.code})`
  }
  return "The service could not be reached. Check your connection and try again."
}

/**
 * A failed verify probe (`details` of `409 verification_failed`) in end-user words: whether the
 * provider refused the credentials or could not be reached, never its address or socket error.
 */
export const probeProblem = (message: string): string => {
  if (/\b(401|403)\b/.test(message)) return "The provider did not accept these credentials."
  if (/\b(429|5\d\d)\b/.test(message)) return "The provider is not answering normally right now. Try again in a moment."
  if (/\b4\d\d\b/.test(message)) return "The provider refused the check. Your settings may be wrong."
  return "The provider could not be reached right now. Try again in a moment."
}

/** What an end user reads when signing in at the provider failed with `code`. */
export const providerError = (code: string): string =>
  friendlyErrors[code] ?? `Signing in at the provider did not complete. (${code})`
