/**
 * The one error family of the HTTP APIs (STYLE.md pattern 3, API-CONVENTIONS "Errors").
 *
 * Every error encodes to exactly `{ error, code, details? }` — the `_tag` is filled on decode and
 * omitted on encode, so the wire body never carries implementation names. One class per HTTP
 * status keeps client decoding unambiguous; `code` is the stable machine-readable reason.
 */
import { Schema, SchemaIssue } from "effect"

/** One field-level problem inside an error body; `field` is a dotted path such as `labels.env`. */
export const ErrorDetail = Schema.Struct({
  field: Schema.String,
  message: Schema.String
}).annotate({ identifier: "ErrorDetail" })
export type ErrorDetail = typeof ErrorDetail.Type

const body = {
  error: Schema.String,
  code: Schema.String,
  details: Schema.optionalKey(Schema.Array(ErrorDetail))
}

/** The wire shape of one error class, named `identifier` in the OpenAPI and Swagger documents. */
const wire = <const Fields extends Schema.Struct.Fields>(identifier: string, fields: Fields) =>
  Schema.Struct(fields).annotate({ identifier })

type Body = {
  readonly error: string
  readonly code: string
  readonly details?: ReadonlyArray<ErrorDetail>
}

/** 400: malformed or invalid input, schema decoding failures included. */
export class BadRequest extends Schema.Error<BadRequest>("svc/BadRequest")(
  wire("BadRequest", { _tag: Schema.tagDefaultOmit("BadRequest"), ...body }),
  { httpApiStatus: 400, description: "The request is malformed or invalid" }
) {}

/** 401: missing, invalid or expired credentials. */
export class Unauthorized extends Schema.Error<Unauthorized>("svc/Unauthorized")(
  wire("Unauthorized", { _tag: Schema.tagDefaultOmit("Unauthorized"), ...body }),
  { httpApiStatus: 401, description: "Missing, invalid or expired credentials" }
) {}

/** 403: authenticated, but the actor or token lacks the permission. */
export class Forbidden extends Schema.Error<Forbidden>("svc/Forbidden")(
  wire("Forbidden", { _tag: Schema.tagDefaultOmit("Forbidden"), ...body }),
  { httpApiStatus: 403, description: "The caller is not permitted to do this" }
) {}

/** 404: unknown resource, or one the caller may not see. */
export class NotFound extends Schema.Error<NotFound>("svc/NotFound")(
  wire("NotFound", { _tag: Schema.tagDefaultOmit("NotFound"), ...body }),
  { httpApiStatus: 404, description: "The resource does not exist or is not visible" }
) {}

/** 409: name conflict, concurrent operation or a state that forbids the change. */
export class Conflict extends Schema.Error<Conflict>("svc/Conflict")(
  wire("Conflict", { _tag: Schema.tagDefaultOmit("Conflict"), ...body }),
  { httpApiStatus: 409, description: "The request conflicts with the current state" }
) {}

/** 413: the request body is larger than the configured cap. */
export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("svc/PayloadTooLarge")(
  wire("PayloadTooLarge", { _tag: Schema.tagDefaultOmit("PayloadTooLarge"), ...body }),
  { httpApiStatus: 413, description: "The request body is too large" }
) {}

/**
 * 429: svc's own rate limiting answered instead of the upstream (spec 7): the one error whose body
 * is not `{error, code}` but exactly `{error, rate_limit_id, retry_after_seconds}`
 * (`rate_limit_id` null for a reactive cool-down), with `Retry-After`, `X-Svc-Ratelimited: true`
 * and, for a rule, `X-Svc-Ratelimit: <rule id>`. The proxy writes it itself; declared for the API
 * description.
 */
export class RateLimited extends Schema.Error<RateLimited>("svc/RateLimited")(
  wire("RateLimited", {
    _tag: Schema.tagDefaultOmit("RateLimited"),
    error: Schema.String,
    rate_limit_id: Schema.NullOr(Schema.String),
    retry_after_seconds: Schema.Int
  }),
  { httpApiStatus: 429, description: "A rate-limit rule or the connection's cool-down answered; see Retry-After" }
) {}

/** 500: an unexpected fault; the body never carries the cause. */
export class InternalError extends Schema.Error<InternalError>("svc/InternalError")(
  wire("InternalError", { _tag: Schema.tagDefaultOmit("InternalError"), ...body }),
  { httpApiStatus: 500, description: "An unexpected internal error" }
) {}

/** 503: a required store is unavailable, or the server is overloaded. */
export class ServiceUnavailable extends Schema.Error<ServiceUnavailable>("svc/ServiceUnavailable")(
  wire("ServiceUnavailable", { _tag: Schema.tagDefaultOmit("ServiceUnavailable"), ...body }),
  { httpApiStatus: 503, description: "A required store is unavailable" }
) {}

/** 502: the upstream (a provider's token endpoint, a probe target) was unreachable or misbehaved. */
export class BadGateway extends Schema.Error<BadGateway>("svc/BadGateway")(
  wire("BadGateway", { _tag: Schema.tagDefaultOmit("BadGateway"), ...body }),
  { httpApiStatus: 502, description: "The upstream was unreachable or answered with a protocol error" }
) {}

/** 504: the upstream did not answer in time. */
export class GatewayTimeout extends Schema.Error<GatewayTimeout>("svc/GatewayTimeout")(
  wire("GatewayTimeout", { _tag: Schema.tagDefaultOmit("GatewayTimeout"), ...body }),
  { httpApiStatus: 504, description: "The upstream timed out" }
) {}

/** Every error of the family, in status order. */
export type ApiError =
  | BadRequest
  | Unauthorized
  | Forbidden
  | NotFound
  | Conflict
  | PayloadTooLarge
  | InternalError
  | BadGateway
  | ServiceUnavailable
  | GatewayTimeout

/**
 * The HTTP status of an error of the family, read from its class's `httpApiStatus` (the one table
 * HttpApi itself answers with), for code that renders responses outside HttpApi; 500 otherwise.
 */
export const httpStatusOf = (error: ApiError): number => {
  const annotations = (error.constructor as { readonly ast?: { readonly annotations?: Record<string, unknown> } }).ast
    ?.annotations
  const status = annotations?.httpApiStatus
  return typeof status === "number" ? status : 500
}

/** The body of the standard 500: never a cause, never a stack. */
export const internalErrorBody: Body = { error: "internal error", code: "internal_error" }

/** The wire body of an error, for code that renders responses outside HttpApi. */
export const errorBody = (error: Body): Body =>
  error.details === undefined || error.details.length === 0
    ? { error: error.error, code: error.code }
    : { error: error.error, code: error.code, details: error.details }

const formatter = SchemaIssue.makeFormatterStandardSchemaV1({
  // Never echo the offending input: it may be a credential.
  leafHook: (issue) => {
    switch (issue._tag) {
      case "InvalidType":
        return "Invalid type"
      case "MissingKey":
        return "Missing key"
      case "UnexpectedKey":
        return "Unexpected key"
      case "Forbidden":
        return "Forbidden value"
      case "OneOf":
        return "Matches more than one allowed shape"
      case "InvalidValue":
        return typeof issue.annotations?.message === "string" ? issue.annotations.message : "Invalid value"
    }
  },
  checkHook: (issue) => {
    const annotations = issue.filter.annotations
    const message = annotations?.message ?? annotations?.description
    if (typeof message === "string") return message
    // A filter that reported nested problems: let each keep its own path and message.
    if (issue.issue._tag !== "InvalidValue") return undefined
    const own = issue.issue.annotations?.message
    if (typeof own === "string") return own
    return typeof annotations?.expected === "string" ? `Expected ${annotations.expected}` : "Invalid value"
  }
})

/** Dotted path (`a.b[0].c`) of a decoding issue, relative to a named root such as `query`. */
export const formatPath = (path: ReadonlyArray<PropertyKey>, root?: string): string => {
  let out = root ?? ""
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`
    else out += out === "" ? String(key) : `.${String(key)}`
  }
  return out === "" ? "(root)" : out
}

/** Field-level details of a Schema issue, without the offending values. */
export const issueDetails = (issue: SchemaIssue.Issue, root?: string): ReadonlyArray<ErrorDetail> =>
  formatter(issue).issues.map((i) => ({
    field: formatPath(
      (i.path ?? []).map((p) => (typeof p === "object" ? p.key : p)),
      root
    ),
    message: i.message
  }))
