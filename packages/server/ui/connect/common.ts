/** What the Connect UI's screens share: the API on the browser session, step ids, error wording. */
import { ApiError, describeError, makeApi } from "../shared/api.ts"

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

export const messageOf = (error: unknown): string =>
  error instanceof ApiError && friendlyErrors[error.code] !== undefined
    ? `${friendlyErrors[error.code]} (${error.code})`
    : describeError(error)
