import { Schema } from "effect"
import { BadGateway, BadRequest, GatewayTimeout, ServiceUnavailable } from "@svc/domain/Errors"

/** Why an outbound request did not produce a response. */
export const OutboundErrorReason = Schema.Literals([
  "host_not_allowed",
  "address_not_allowed",
  "invalid_request",
  "dns_failed",
  "connect_failed",
  "timeout",
  "response_too_large",
  /** The upstream's status line and headers exceed `outbound.max_response_header_bytes`. */
  "response_headers_too_large",
  "protocol_error",
  /** svc's own rate limiting held the request back; it never left (`connections/LimitedCalls.ts`). */
  "rate_limited"
])
export type OutboundErrorReason = typeof OutboundErrorReason.Type

/**
 * An outbound request failed before a complete response; HTTP-free. Log-safe: `target` is at most
 * `scheme://host:port/path` and `detail` is a fixed phrase, never a header value or query string.
 */
export class OutboundError extends Schema.TaggedError<OutboundError>()("OutboundError", {
  reason: OutboundErrorReason,
  target: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `${this.reason}: ${this.detail} (${this.target})`
  }
}

/** Failures of requests the guard refused: they never left, so they leave no request event. */
export const refusedBeforeLeaving: ReadonlySet<OutboundErrorReason> = new Set([
  "host_not_allowed",
  "address_not_allowed",
  "invalid_request"
])

/** The log-safe form of a URL: scheme, host, port and path (truncated), never user info or query. */
export const logSafeTarget = (url: URL): string => {
  const port = url.port !== "" ? url.port : url.protocol === "https:" ? "443" : url.protocol === "http:" ? "80" : ""
  const path = url.pathname.length > 200 ? `${url.pathname.slice(0, 200)}…` : url.pathname
  return `${url.protocol}//${url.hostname}${port === "" ? "" : `:${port}`}${path}`
}

const httpErrors: Record<
  OutboundErrorReason,
  { readonly status: 400 | 502 | 503 | 504; readonly code: string; readonly error: string }
> = {
  host_not_allowed: {
    status: 400,
    code: "upstream_host_not_allowed",
    error: "The upstream URL is not allowed by the connector"
  },
  address_not_allowed: {
    status: 400,
    code: "upstream_address_not_allowed",
    error: "The upstream host resolves to an address that is not allowed"
  },
  invalid_request: { status: 400, code: "invalid_upstream_request", error: "The upstream request is not allowed" },
  dns_failed: { status: 502, code: "upstream_dns_failed", error: "The upstream host name could not be resolved" },
  connect_failed: { status: 502, code: "upstream_unreachable", error: "The upstream could not be reached" },
  protocol_error: {
    status: 502,
    code: "upstream_protocol_error",
    error: "The upstream answered with a protocol error"
  },
  response_headers_too_large: {
    status: 502,
    code: "upstream_response_headers_too_large",
    error: "The upstream response headers are larger than allowed"
  },
  response_too_large: {
    status: 502,
    code: "upstream_response_too_large",
    error: "The upstream response is larger than allowed"
  },
  timeout: { status: 504, code: "upstream_timeout", error: "The upstream did not answer in time" },
  rate_limited: { status: 503, code: "rate_limited", error: "A rate limit held the request back; retry later" }
}

/**
 * The standard API error for an outbound failure: 400 disallowed host/address, 502
 * unreachable/protocol, 503 held back by a rate limit, 504 timeout.
 */
export const outboundHttpError = (
  error: OutboundError
): BadRequest | BadGateway | ServiceUnavailable | GatewayTimeout => {
  const { status, code, error: message } = httpErrors[error.reason]
  switch (status) {
    case 400:
      // The detail of a refused request is a fixed phrase (never a value), worth showing the caller.
      return new BadRequest({
        error: error.reason === "invalid_request" ? `${message}: ${error.detail}` : message,
        code
      })
    case 502:
      return new BadGateway({ error: message, code })
    case 503:
      return new ServiceUnavailable({ error: `${message}: ${error.detail}`, code })
    case 504:
      return new GatewayTimeout({ error: message, code })
  }
}
