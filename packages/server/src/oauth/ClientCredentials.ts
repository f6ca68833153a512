/**
 * The OAuth2 client credentials grant (RFC 6749 4.4): one token request, its response parsed and
 * checked. Transport-free: the caller passes `send` (normally `Outbound.send` with the endpoint's
 * policy), so the host and address rules of every outbound request apply here too.
 */
import { Effect, Schema } from "effect"
import type { ClientCredentialsInput, OAuth2ClientCredentialsAuth, OAuth2TokenSet } from "@svc/domain/ConnectorAuth"
import type { OutboundRequest, OutboundResponse } from "../proxy/Outbound.ts"
import type { OutboundError } from "../proxy/OutboundError.ts"
import { scrubbed, tokenResponseFields } from "./TokenResponse.ts"

/** Why a token request failed (RFC 6749 5.2 codes where the provider named one). */
export const TokenRequestFailureReason = Schema.Literals([
  "invalid_client",
  "invalid_grant",
  "invalid_scope",
  "unauthorized_client",
  "provider_error",
  "provider_5xx",
  "network_error",
  "timeout",
  "malformed_response"
])
export type TokenRequestFailureReason = typeof TokenRequestFailureReason.Type

/**
 * A token request failed. The message names the provider's `error` and `error_description`
 * (control characters removed, at most 200 characters, the client secret blanked) and never a
 * token or secret, so it may be shown to the caller.
 */
export class TokenRequestFailed extends Schema.TaggedError<TokenRequestFailed>()("TokenRequestFailed", {
  reason: TokenRequestFailureReason,
  status: Schema.optionalKey(Schema.Number),
  detail: Schema.String
}) {
  override get message(): string {
    return `token request failed (${this.reason}${this.status === undefined ? "" : `, HTTP ${this.status}`}): ${this.detail}`
  }
}

type ClientCredentialsAuth = typeof OAuth2ClientCredentialsAuth.Type

const maxLifetimeSeconds = 365 * 24 * 60 * 60

/** `application/x-www-form-urlencoded` encoding of one value (RFC 6749 2.3.1, Appendix B). */
const formEncode = (value: string): string => new URLSearchParams([["", value]]).toString().slice(1)

const knownErrors: ReadonlySet<TokenRequestFailureReason> = new Set([
  "invalid_client",
  "invalid_grant",
  "invalid_scope",
  "unauthorized_client"
])

const tokenRequest = (
  auth: ClientCredentialsAuth,
  input: ClientCredentialsInput
): OutboundRequest | TokenRequestFailed => {
  const body = new URLSearchParams({ grant_type: "client_credentials" })
  if (auth.scopes.length > 0) body.set("scope", auth.scopes.map((scope) => scope.name).join(auth.scope_separator))
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json"
  }
  if (auth.client_auth === "none") {
    body.set("client_id", input.client_id)
  } else {
    if (input.client_secret === undefined) {
      return new TokenRequestFailed({ reason: "invalid_client", detail: `${auth.client_auth} needs a client_secret` })
    }
    if (auth.client_auth === "client_secret_basic") {
      const pair = `${formEncode(input.client_id)}:${formEncode(input.client_secret)}`
      headers.authorization = `Basic ${Buffer.from(pair, "utf8").toString("base64")}`
    } else {
      body.set("client_id", input.client_id)
      body.set("client_secret", input.client_secret)
    }
  }
  for (const [name, value] of Object.entries(auth.token_params ?? {})) {
    // The grant, scope and client authentication are ours; extra parameters only add.
    if (name === "client_id" || name === "client_secret" || body.has(name)) continue
    body.set(name, value)
  }
  return { method: "POST", url: new URL(auth.token_endpoint), headers, body: body.toString() }
}

const grantedScopes = (scope: string, separator: string): ReadonlySet<string> =>
  new Set(
    scope
      .split(separator === "" ? /[\s,]+/ : separator)
      .flatMap((part) => part.split(/[\s,]+/))
      .filter((part) => part !== "")
  )

/** Fetches a token with the client credentials grant; `now` is epoch milliseconds for `expires_at`. */
export const fetchClientCredentialsToken = Effect.fn("fetchClientCredentialsToken")(function* (
  auth: ClientCredentialsAuth,
  input: ClientCredentialsInput,
  send: (request: OutboundRequest) => Effect.Effect<OutboundResponse, OutboundError>,
  now: number
): Effect.fn.Return<OAuth2TokenSet, TokenRequestFailed> {
  const request = tokenRequest(auth, input)
  if (request instanceof TokenRequestFailed) return yield* request
  // The secret as sent (form-encoded, in a Basic header) is blanked too, should a provider echo it.
  const secret = input.client_secret
  const secrets =
    secret === undefined
      ? []
      : [secret, formEncode(secret), encodeURIComponent(secret), request.headers.authorization?.slice(6) ?? ""]
  const response = yield* send(request).pipe(
    Effect.mapError(
      (error) =>
        new TokenRequestFailed({
          reason: error.reason === "timeout" ? "timeout" : "network_error",
          detail: `the token endpoint could not be used: ${error.message}`
        })
    )
  )
  const status = response.status
  const fields = tokenResponseFields(response)
  const fail = (reason: TokenRequestFailureReason, detail: string) =>
    new TokenRequestFailed({ reason, status, detail: scrubbed(detail, secrets, 500) })
  const providerError = fields === undefined ? undefined : fields.error
  if (providerError !== undefined || status < 200 || status > 299) {
    const description = fields?.error_description
    const named =
      providerError === undefined
        ? ""
        : `${scrubbed(providerError, secrets)}${description === undefined ? "" : `: ${scrubbed(description, secrets)}`}`
    const detail = named === "" ? `the token endpoint answered HTTP ${status}` : named
    if (status >= 500) return yield* fail("provider_5xx", detail)
    const known = [...knownErrors].find((reason) => reason === providerError)
    if (known !== undefined) return yield* fail(known, detail)
    if (providerError === undefined && status === 401) return yield* fail("invalid_client", detail)
    return yield* fail("provider_error", detail)
  }
  if (fields === undefined) return yield* fail("malformed_response", "the token response is not JSON or form data")
  const accessToken = fields.access_token
  const tokenType = fields.token_type
  if (accessToken === undefined || accessToken === "" || accessToken.length > 8192) {
    return yield* fail("malformed_response", "the token response has no usable access_token")
  }
  if (tokenType === undefined || tokenType === "") {
    return yield* fail("malformed_response", "the token response has no token_type")
  }
  const scope = fields.scope
  if (scope !== undefined) {
    const granted = grantedScopes(scope, auth.scope_separator)
    const missing = auth.scopes.filter((wanted) => wanted.required && !granted.has(wanted.name))
    if (missing.length > 0) {
      return yield* fail("invalid_scope", `required scopes not granted: ${missing.map((s) => s.name).join(", ")}`)
    }
  }
  const lifetime = fields.expires_in
  const expiresAt =
    lifetime !== undefined && Number.isFinite(lifetime) && lifetime > 0
      ? now + Math.min(lifetime, maxLifetimeSeconds) * 1000
      : undefined
  const refreshToken = fields.refresh_token
  return {
    access_token: accessToken,
    token_type: tokenType,
    ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
    ...(refreshToken === undefined || refreshToken === "" || refreshToken.length > 8192
      ? {}
      : { refresh_token: refreshToken }),
    ...(scope === undefined ? {} : { scope })
  }
})
