/**
 * Token revocation (RFC 7009), transport-free: one client-authenticated form POST of the token and
 * its type hint to the definition's `revocation_endpoint`.
 */
import { countRevocation } from "./OAuth2Telemetry.ts"
import { Effect } from "effect"
import type { ClientAuthMethod } from "@svc/domain/ConnectorAuth"
import { clientAuthenticatedForm, type OAuth2Client, secretForms } from "./ClientAuth.ts"
import { errorAnswer, type SendOutbound, sendForm } from "./TokenEndpoint.ts"
import { TokenRequestFailed } from "./TokenRequestFailed.ts"
import { tokenResponseFields } from "./TokenResponse.ts"

/** The token to revoke and which kind it is (RFC 7009 2.1 `token_type_hint`). */
export interface Revocation {
  readonly token: string
  readonly tokenTypeHint: "refresh_token" | "access_token"
}

/**
 * Revokes a token at `endpoint` (RFC 7009 2.1): POST `token` and `token_type_hint` with client
 * authentication. Any 2xx is success whatever the body (2.2: an unknown token is 200 too); a 5xx
 * (503 included) is `provider_5xx`; an error answer naming one of our RFC 6749 5.2 codes is that
 * reason, a bare 401 `invalid_client`, anything else `provider_error`; outbound failures are
 * `network_error` or `timeout`. Neither the token nor the client secret appears in a failure.
 */
export const revokeToken = Effect.fnUntraced(
  function* (
    endpoint: string,
    clientAuth: ClientAuthMethod,
    client: OAuth2Client,
    revocation: Revocation,
    send: SendOutbound
  ): Effect.fn.Return<void, TokenRequestFailed> {
    const form = clientAuthenticatedForm(endpoint, clientAuth, client, [
      ["token", revocation.token],
      ["token_type_hint", revocation.tokenTypeHint]
    ])
    if (form instanceof TokenRequestFailed) return yield* form
    const response = yield* sendForm(form, send, "revocation endpoint")
    if (response.status >= 200 && response.status <= 299) return
    const secrets = [...form.secrets, ...secretForms(revocation.token)]
    return yield* errorAnswer(response.status, tokenResponseFields(response), secrets, "revocation endpoint")
  },
  (effect, _endpoint, _clientAuth, _client, revocation) => countRevocation(revocation.tokenTypeHint)(effect)
)
