/**
 * The OAuth2 client credentials grant (RFC 6749 4.4): one token request, its response parsed and
 * checked. Transport-free: the caller passes `send` (normally `Outbound.send` with the endpoint's
 * policy), so the host and address rules of every outbound request apply here too.
 */
import { Effect } from "effect"
import type { ClientCredentialsInput, OAuth2ClientCredentialsAuth, OAuth2TokenSet } from "@svc/domain/ConnectorAuth"
import { clientAuthenticatedForm } from "./ClientAuth.ts"
import {
  failure,
  missingRequiredScopes,
  requestedScope,
  type SendOutbound,
  sendForm,
  tokenAnswer
} from "./TokenEndpoint.ts"
import { TokenRequestFailed } from "./TokenRequestFailed.ts"

export { TokenRequestFailed, TokenRequestFailureReason } from "./TokenRequestFailed.ts"

type ClientCredentialsAuth = typeof OAuth2ClientCredentialsAuth.Type

/**
 * Fetches a token with the client credentials grant; `now` is epoch milliseconds for `expires_at`
 * and `obtained_at`. A granted `scope` missing a required scope is `invalid_scope`.
 */
export const fetchClientCredentialsToken = Effect.fn("fetchClientCredentialsToken")(function* (
  auth: ClientCredentialsAuth,
  input: ClientCredentialsInput,
  send: SendOutbound,
  now: number
): Effect.fn.Return<OAuth2TokenSet, TokenRequestFailed> {
  const scope = requestedScope(auth.scopes, auth.scope_separator)
  const form = clientAuthenticatedForm(
    auth.token_endpoint,
    auth.client_auth,
    input,
    [["grant_type", "client_credentials"], ...(scope === undefined ? [] : [["scope", scope] as const])],
    auth.token_params
  )
  if (form instanceof TokenRequestFailed) return yield* form
  const response = yield* sendForm(form, send, "token endpoint")
  const token = tokenAnswer(response, form.secrets, now)
  if (token instanceof TokenRequestFailed) return yield* token
  if (token.scope !== undefined) {
    const missing = missingRequiredScopes(auth.scopes, token.scope, auth.scope_separator)
    if (missing.length > 0) {
      return yield* failure(
        "invalid_scope",
        response.status,
        `required scopes not granted: ${missing.join(", ")}`,
        form.secrets
      )
    }
  }
  return token
})
