/**
 * Refreshing an OAuth2 access token (RFC 6749 6), transport-free, and the classification of refresh
 * failures into the reasons of `svc.oauth2.refresh.failures.total` (spec 8.3).
 */
import { Effect, Schema } from "effect"
import type { OAuth2AuthorizationCodeAuth, OAuth2TokenSet } from "@svc/domain/ConnectorAuth"
import { clientAuthenticatedForm, type OAuth2Client, secretForms } from "./ClientAuth.ts"
import { type SendOutbound, sendForm, tokenAnswer } from "./TokenEndpoint.ts"
import { TokenRequestFailed } from "./TokenRequestFailed.ts"

/** The token endpoint settings a refresh uses (any OAuth2 auth block has them). */
export type RefreshEndpoint = Pick<
  typeof OAuth2AuthorizationCodeAuth.Type,
  "token_endpoint" | "client_auth" | "token_params"
>

/** A token set that can be refreshed: it holds a refresh token. */
export type RefreshableTokenSet = OAuth2TokenSet & { readonly refresh_token: string }

/**
 * Whether `token` holds a refresh token. When it does not, nothing can be refreshed: the caller
 * records the refresh failure as `no_refresh_token` (spec 8.3) without calling `refreshTokenSet`.
 */
export const hasRefreshToken = (token: OAuth2TokenSet): token is RefreshableTokenSet =>
  token.refresh_token !== undefined && token.refresh_token !== ""

/**
 * Refreshes `current` (RFC 6749 6: `grant_type=refresh_token`, client authentication, no `scope`
 * so the original scope is kept; `token_params` only add), obtained at `now` (epoch ms). The old
 * refresh token and scope are kept when the answer omits them; `expires_at` is set only from the
 * answer's `expires_in`. No secret (client secret, either token) appears in a failure. Neither
 * a span nor a counter of its own: the refresher's `oauth2.refresh` span and `recordRefresh` are.
 */
export const refreshTokenSet = Effect.fnUntraced(function* (
  auth: RefreshEndpoint,
  client: OAuth2Client,
  current: RefreshableTokenSet,
  send: SendOutbound,
  now: number
): Effect.fn.Return<OAuth2TokenSet, TokenRequestFailed> {
  const form = clientAuthenticatedForm(
    auth.token_endpoint,
    auth.client_auth,
    client,
    [
      ["grant_type", "refresh_token"],
      ["refresh_token", current.refresh_token]
    ],
    auth.token_params
  )
  if (form instanceof TokenRequestFailed) return yield* form
  const secrets = [...form.secrets, ...secretForms(current.refresh_token), ...secretForms(current.access_token)]
  const response = yield* sendForm(form, send, "token endpoint")
  const token = tokenAnswer(response, secrets, now)
  if (token instanceof TokenRequestFailed) return yield* token
  return {
    ...token,
    refresh_token: token.refresh_token ?? current.refresh_token,
    ...(token.scope === undefined && current.scope !== undefined ? { scope: current.scope } : {})
  }
})

/** The `reason` of `svc.oauth2.refresh.failures.total` (spec 8.3). */
export const RefreshFailureReason = Schema.Literals([
  "invalid_grant",
  "provider_5xx",
  "network_error",
  "no_refresh_token",
  "malformed_response",
  "internal_error",
  "provider_rejected",
  "rate_limited"
])
export type RefreshFailureReason = typeof RefreshFailureReason.Type
