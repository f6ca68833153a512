/**
 * The OAuth2 authorization code grant with PKCE S256 (RFC 6749 4.1, RFC 7636): the authorization
 * request URL and the code exchange at the token endpoint, transport-free like the other grants.
 */
import { countTokenExchange } from "./OAuth2Telemetry.ts"
import { Effect } from "effect"
import type { OAuth2AuthorizationCodeAuth, OAuth2TokenSet } from "@svc/domain/ConnectorAuth"
import { clientAuthenticatedForm, type OAuth2Client, secretForms } from "./ClientAuth.ts"
import {
  failure,
  missingRequiredScopes,
  requestedScope,
  type SendOutbound,
  sendForm,
  tokenAnswer
} from "./TokenEndpoint.ts"
import { TokenRequestFailed } from "./TokenRequestFailed.ts"

type AuthorizationCodeAuth = typeof OAuth2AuthorizationCodeAuth.Type

/** What one authorization request carries besides the definition. */
export interface AuthorizationRequest {
  readonly clientId: string
  readonly redirectUri: string
  readonly state: string
  /** The S256 challenge of the flow's verifier (`makePkce`). */
  readonly codeChallenge: string
}

/** What the callback brought back and the flow kept, for the exchange. */
export interface CodeExchange {
  readonly code: string
  readonly codeVerifier: string
  /** The exact `redirect_uri` of the authorization request (RFC 6749 4.1.3). */
  readonly redirectUri: string
}

/**
 * The URL to send the user to: the definition's `authorization_endpoint` (its query kept, any
 * fragment dropped) with `response_type=code`, `client_id`, `redirect_uri`, `scope` (the
 * definition's scopes joined with `scope_separator`, absent when there are none), `state`,
 * `code_challenge` and `code_challenge_method=S256`; `authorize_params` only add names not
 * already present and never replace one of these.
 */
export const authorizationUrl = (auth: AuthorizationCodeAuth, request: AuthorizationRequest): string => {
  const url = new URL(auth.authorization_endpoint)
  url.hash = ""
  const scope = requestedScope(auth.scopes, auth.scope_separator)
  const ours: ReadonlyArray<readonly [string, string]> = [
    ["response_type", "code"],
    ["client_id", request.clientId],
    ["redirect_uri", request.redirectUri],
    ...(scope === undefined ? [] : [["scope", scope] as const]),
    ["state", request.state],
    ["code_challenge", request.codeChallenge],
    ["code_challenge_method", "S256"]
  ]
  for (const [name, value] of ours) url.searchParams.set(name, value)
  for (const [name, value] of Object.entries(auth.authorize_params ?? {})) {
    if (!url.searchParams.has(name)) url.searchParams.append(name, value)
  }
  return url.toString()
}

/**
 * Exchanges an authorization code for a token set (RFC 6749 4.1.3 with the PKCE `code_verifier`),
 * obtained at `now` (epoch ms). Without a `scope` in the answer the granted scope is the requested
 * one (RFC 6749 5.1); a granted `scope` missing a required scope is `invalid_scope`. No secret
 * (client secret, code, verifier, token) appears in a failure.
 */
export const exchangeCode = Effect.fnUntraced(function* (
  auth: AuthorizationCodeAuth,
  client: OAuth2Client,
  exchange: CodeExchange,
  send: SendOutbound,
  now: number
): Effect.fn.Return<OAuth2TokenSet, TokenRequestFailed> {
  const form = clientAuthenticatedForm(
    auth.token_endpoint,
    auth.client_auth,
    client,
    [
      ["grant_type", "authorization_code"],
      ["code", exchange.code],
      ["redirect_uri", exchange.redirectUri],
      ["code_verifier", exchange.codeVerifier]
    ],
    auth.token_params
  )
  if (form instanceof TokenRequestFailed) return yield* form
  const secrets = [...form.secrets, ...secretForms(exchange.code), ...secretForms(exchange.codeVerifier)]
  const response = yield* sendForm(form, send, "token endpoint")
  const token = tokenAnswer(response, secrets, now)
  if (token instanceof TokenRequestFailed) return yield* token
  if (token.scope !== undefined) {
    const missing = missingRequiredScopes(auth.scopes, token.scope, auth.scope_separator)
    if (missing.length > 0) {
      return yield* failure(
        "invalid_scope",
        response.status,
        `required scopes not granted: ${missing.join(", ")}`,
        secrets
      )
    }
    return token
  }
  const requested = requestedScope(auth.scopes, auth.scope_separator)
  return requested === undefined ? token : { ...token, scope: requested }
}, countTokenExchange)
