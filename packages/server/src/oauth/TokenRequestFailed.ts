/**
 * The one failure of every OAuth2 client request (token endpoint, revocation endpoint), and its
 * classification into the metric reasons of spec 8.3 (`svc.oauth2.*.failures.total{reason}`).
 */
import { Schema } from "effect"

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
  "malformed_response",
  /** svc's own rate limiting held the request back (a rule selecting its OAuth2 request type). */
  "rate_limited"
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

/** The metric reasons a failed token request maps to (spec 8.3), before caller-only reasons. */
export type FailureMetricReason =
  | "invalid_grant"
  | "provider_5xx"
  | "network_error"
  | "malformed_response"
  | "provider_rejected"
  | "rate_limited"

/**
 * The spec 8.3 metric reason of a failed token request: the provider's `invalid_grant`, a 5xx, an
 * unreachable or slow endpoint, an unreadable answer, or any other refusal (`provider_rejected`).
 */
export const failureMetricReason = (failure: TokenRequestFailed): FailureMetricReason => {
  switch (failure.reason) {
    case "invalid_grant":
    case "provider_5xx":
    case "malformed_response":
    case "rate_limited":
      return failure.reason
    case "network_error":
    case "timeout":
      return "network_error"
    case "invalid_client":
    case "unauthorized_client":
    case "invalid_scope":
    case "provider_error":
      return "provider_rejected"
  }
}
