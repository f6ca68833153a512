/**
 * One round trip to an OAuth2 endpoint, shared by every grant and by revocation: sending through
 * the caller's `send` (so every outbound policy applies), classifying error answers (RFC 6749 5.2)
 * and reading a successful token response (5.1) into a token set.
 */
import { Effect } from "effect"
import type { OAuth2Scope, OAuth2TokenSet } from "@svc/domain/ConnectorAuth"
import type { OutboundRequest, OutboundResponse } from "../outbound/Outbound.ts"
import type { OutboundError } from "../outbound/OutboundError.ts"
import type { FormRequest } from "./ClientAuth.ts"
import { TokenRequestFailed, type TokenRequestFailureReason } from "./TokenRequestFailed.ts"
import { scrubbed, type TokenResponseFields, tokenResponseFields } from "./TokenResponse.ts"

/** How requests leave: normally `Outbound.send` bound to the endpoint's policy, timeouts and size cap. */
export type SendOutbound = (request: OutboundRequest) => Effect.Effect<OutboundResponse, OutboundError>

const maxLifetimeSeconds = 365 * 24 * 60 * 60
const maxTokenLength = 8192

const knownErrors: ReadonlyArray<TokenRequestFailureReason> = [
  "invalid_client",
  "invalid_grant",
  "invalid_scope",
  "unauthorized_client"
]

/**
 * Sends `form`; an outbound failure is `timeout`, `rate_limited` (svc's own limiter held it back)
 * or `network_error`, naming the endpoint (`what`) only.
 */
export const sendForm = (
  form: FormRequest,
  send: SendOutbound,
  what: string
): Effect.Effect<OutboundResponse, TokenRequestFailed> =>
  send(form.request).pipe(
    Effect.mapError(
      (error) =>
        new TokenRequestFailed({
          reason:
            error.reason === "timeout" ? "timeout" : error.reason === "rate_limited" ? "rate_limited" : "network_error",
          detail: `the ${what} could not be used: ${error.message}`
        })
    )
  )

/** A failure with provider-derived `detail`, every secret blanked, at most 500 characters. */
export const failure = (
  reason: TokenRequestFailureReason,
  status: number,
  detail: string,
  secrets: ReadonlyArray<string>
): TokenRequestFailed => new TokenRequestFailed({ reason, status, detail: scrubbed(detail, secrets, 500) })

/**
 * The failure an error answer stands for: a 5xx is `provider_5xx`; a named RFC 6749 5.2 code we
 * know is that reason; a bare 401 is `invalid_client`; anything else is `provider_error`.
 */
export const errorAnswer = (
  status: number,
  fields: TokenResponseFields | undefined,
  secrets: ReadonlyArray<string>,
  what: string
): TokenRequestFailed => {
  const providerError = fields?.error
  const description = fields?.error_description
  const named =
    providerError === undefined
      ? ""
      : `${scrubbed(providerError, secrets)}${description === undefined ? "" : `: ${scrubbed(description, secrets)}`}`
  const detail = named === "" ? `the ${what} answered HTTP ${status}` : named
  if (status >= 500) return failure("provider_5xx", status, detail, secrets)
  const known = knownErrors.find((reason) => reason === providerError)
  if (known !== undefined) return failure(known, status, detail, secrets)
  if (providerError === undefined && status === 401) return failure("invalid_client", status, detail, secrets)
  return failure("provider_error", status, detail, secrets)
}

/**
 * The token set of a token endpoint answer, obtained at `now` (epoch ms): an `error` member or a
 * non-2xx status fails as `errorAnswer`; a body that is neither JSON nor form data, or lacks a
 * usable `access_token` or `token_type`, is `malformed_response`. `expires_in` counts only when
 * positive, capped at one year; `scope` is the granted scope exactly as the provider wrote it.
 */
export const tokenAnswer = (
  response: OutboundResponse,
  secrets: ReadonlyArray<string>,
  now: number
): OAuth2TokenSet | TokenRequestFailed => {
  const status = response.status
  const fields = tokenResponseFields(response)
  if (fields?.error !== undefined || status < 200 || status > 299) {
    return errorAnswer(status, fields, secrets, "token endpoint")
  }
  if (fields === undefined) {
    return failure("malformed_response", status, "the token response is not JSON or form data", secrets)
  }
  const accessToken = fields.access_token
  if (accessToken === undefined || accessToken === "" || accessToken.length > maxTokenLength) {
    return failure("malformed_response", status, "the token response has no usable access_token", secrets)
  }
  const tokenType = fields.token_type
  if (tokenType === undefined || tokenType === "") {
    return failure("malformed_response", status, "the token response has no token_type", secrets)
  }
  const lifetime = fields.expires_in
  const expiresAt =
    lifetime !== undefined && Number.isFinite(lifetime) && lifetime > 0
      ? now + Math.min(lifetime, maxLifetimeSeconds) * 1000
      : undefined
  const refreshToken = fields.refresh_token
  const scope = fields.scope
  return {
    access_token: accessToken,
    token_type: tokenType,
    ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
    ...(refreshToken === undefined || refreshToken === "" || refreshToken.length > maxTokenLength
      ? {}
      : { refresh_token: refreshToken }),
    ...(scope === undefined ? {} : { scope }),
    obtained_at: now
  }
}

/** The scope parameter of a definition's scopes (RFC 6749 3.3), or undefined when it has none. */
export const requestedScope = (scopes: ReadonlyArray<OAuth2Scope>, separator: string): string | undefined =>
  scopes.length === 0 ? undefined : scopes.map((scope) => scope.name).join(separator)

/**
 * The definition's required scopes missing from a granted `scope` (split on the separator, and
 * leniently on whitespace and commas as providers mix them).
 */
/**
 * The scope names of a granted `scope` string: split on the definition's separator, and leniently
 * on whitespace and commas as providers mix them.
 */
export const scopeNames = (scope: string, separator = " "): ReadonlyArray<string> =>
  scope
    .split(separator)
    .flatMap((part) => part.split(/[\s,]+/))
    .filter((part) => part !== "")

export const missingRequiredScopes = (
  scopes: ReadonlyArray<OAuth2Scope>,
  scope: string,
  separator: string
): ReadonlyArray<string> => {
  const granted = new Set(scopeNames(scope, separator))
  return scopes.filter((wanted) => wanted.required && !granted.has(wanted.name)).map((wanted) => wanted.name)
}
