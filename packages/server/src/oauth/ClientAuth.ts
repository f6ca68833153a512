/**
 * Client authentication of every token-endpoint and revocation request (RFC 6749 2.3.1, RFC 7009
 * 2.1): `client_secret_basic` (form-encoded id and secret in HTTP Basic), `client_secret_post`
 * (both in the body) or `none` (only `client_id` in the body), and the form POST carrying it.
 */
import type { ClientAuthMethod } from "@svc/domain/ConnectorAuth"
import type { OutboundRequest } from "../outbound/Outbound.ts"
import { TokenRequestFailed } from "./TokenRequestFailed.ts"

/** The OAuth2 client as registered at the provider: its id and, unless public, its secret. */
export interface OAuth2Client {
  readonly client_id: string
  readonly client_secret?: string | undefined
}

/** What client authentication adds to a request, and every form of the secret it sends. */
export interface ClientAuthentication {
  readonly headers: Readonly<Record<string, string>>
  readonly params: ReadonlyArray<readonly [string, string]>
  /** The secret as given and as sent (form- and URI-encoded, the Basic credential); blank these in any text. */
  readonly secrets: ReadonlyArray<string>
}

/** A form POST ready for `send`, and the secret values it carries (to blank in provider text). */
export interface FormRequest {
  readonly request: OutboundRequest
  readonly secrets: ReadonlyArray<string>
}

/** `application/x-www-form-urlencoded` encoding of one value (RFC 6749 2.3.1, Appendix B). */
export const formEncode = (value: string): string => new URLSearchParams([["", value]]).toString().slice(1)

/** A secret value in every form it may be echoed: as given, form-encoded and URI-encoded. */
export const secretForms = (value: string): ReadonlyArray<string> => [
  value,
  formEncode(value),
  encodeURIComponent(value)
]

/**
 * The headers and body parameters authenticating `client` with `method`; a method that needs a
 * secret without one is `invalid_client` (nothing is sent).
 */
export const clientAuthentication = (
  method: ClientAuthMethod,
  client: OAuth2Client
): ClientAuthentication | TokenRequestFailed => {
  if (method === "none") return { headers: {}, params: [["client_id", client.client_id]], secrets: [] }
  const secret = client.client_secret
  if (secret === undefined || secret === "") {
    return new TokenRequestFailed({ reason: "invalid_client", detail: `${method} needs a client_secret` })
  }
  if (method === "client_secret_post") {
    return {
      headers: {},
      params: [
        ["client_id", client.client_id],
        ["client_secret", secret]
      ],
      secrets: secretForms(secret)
    }
  }
  const credential = Buffer.from(`${formEncode(client.client_id)}:${formEncode(secret)}`, "utf8").toString("base64")
  return {
    headers: { authorization: `Basic ${credential}` },
    params: [],
    secrets: [...secretForms(secret), credential]
  }
}

/**
 * A client-authenticated form POST to `endpoint`: `params` first, then the client authentication,
 * then `extra` (a definition's `token_params`), which only adds names not already present and
 * never `client_id` or `client_secret`.
 */
export const clientAuthenticatedForm = (
  endpoint: string,
  method: ClientAuthMethod,
  client: OAuth2Client,
  params: ReadonlyArray<readonly [string, string]>,
  extra: Readonly<Record<string, string>> = {}
): FormRequest | TokenRequestFailed => {
  const authentication = clientAuthentication(method, client)
  if (authentication instanceof TokenRequestFailed) return authentication
  const body = new URLSearchParams()
  for (const [name, value] of [...params, ...authentication.params]) body.set(name, value)
  for (const [name, value] of Object.entries(extra)) {
    if (name === "client_id" || name === "client_secret" || body.has(name)) continue
    body.set(name, value)
  }
  return {
    request: {
      method: "POST",
      url: new URL(endpoint),
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
        ...authentication.headers
      },
      body: body.toString()
    },
    secrets: authentication.secrets
  }
}
