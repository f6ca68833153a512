/**
 * Request events (spec 2.12, 4.7; API-CONVENTIONS "Request events"): one record per proxied
 * request, snake_case on the wire, with the label snapshot frozen at request time (spec 2.5);
 * the list filters and their query-text parsers. Pure.
 */
import { Result, Schema } from "effect"
import { requestTypes } from "./RateLimitDefinition.ts"
import { type NamespaceFilter, parseNamespaceFilter } from "./Resource.ts"
import { formatSelectorProblem, parseSelector, type Selector } from "./Selector.ts"

/** Where the answer of a proxied request came from (spec 2.12). */
export const ResponseSource = Schema.Literals(["upstream", "connector_rate_limiter", "rate_limit"])
export type ResponseSource = typeof ResponseSource.Type

/**
 * Request kinds recorded as events, the kinds a rate-limit rule's `request_types` selects (spec
 * 2.8): `proxy` covers `_proxy` and `_proxy_raw`, `probe` connector probes.
 */
export const RequestEventType = Schema.Literals(requestTypes)
export type RequestEventType = typeof RequestEventType.Type

/** One rate-limit rule that matched a request (spec 2.12 `rate_limit_matched`). */
export const RateLimitMatch = Schema.Struct({
  id: Schema.String,
  mode: Schema.Literals(["enforce", "observe"]),
  bucket: Schema.Record(Schema.String, Schema.String)
}).annotate({ identifier: "RateLimitMatch" })
export type RateLimitMatch = typeof RateLimitMatch.Type

/** A stored request event as listed and fetched. */
export const RequestEvent = Schema.Struct({
  id: Schema.String,
  /** ISO 8601 time the request arrived. */
  timestamp: Schema.String,
  /** The connection's namespace. */
  namespace: Schema.String,
  type: RequestEventType,
  method: Schema.String,
  host: Schema.String,
  path: Schema.String,
  /** Absent when no answer was produced (the upstream was unreachable or timed out before headers). */
  response_status_code: Schema.NullOr(Schema.Number),
  response_source: ResponseSource,
  connector_id: Schema.NullOr(Schema.String),
  connector_version: Schema.NullOr(Schema.Number),
  connection_id: Schema.NullOr(Schema.String),
  actor_id: Schema.NullOr(Schema.String),
  duration_ms: Schema.Number,
  labels: Schema.Record(Schema.String, Schema.String),
  rate_limit_id: Schema.NullOr(Schema.String),
  rate_limit_mode: Schema.NullOr(Schema.Literals(["enforce", "observe"])),
  rate_limit_bucket: Schema.NullOr(Schema.Record(Schema.String, Schema.String)),
  rate_limit_matched: Schema.NullOr(Schema.Array(RateLimitMatch)),
  full_request_recorded: Schema.Boolean
}).annotate({ identifier: "RequestEvent" })
export type RequestEvent = typeof RequestEvent.Type

/** A source of an answer svc gave itself without calling the upstream (spec 7: a synthetic 429). */
export type SvcResponseSource = Exclude<ResponseSource, "upstream">

/** The rate-limit fields of a request event (spec 2.12); all null when no rule matched. */
export type RequestEventRateLimit = Pick<
  RequestEvent,
  "rate_limit_id" | "rate_limit_mode" | "rate_limit_bucket" | "rate_limit_matched"
>

/** The rate-limit fields of a request no rule matched. */
export const noRateLimit: RequestEventRateLimit = {
  rate_limit_id: null,
  rate_limit_mode: null,
  rate_limit_bucket: null,
  rate_limit_matched: null
}

/** `GET /api/v1/metrics/request-events`: newest first; `cursor` is absent on the last page. */
export const RequestEventList = Schema.Struct({
  items: Schema.Array(RequestEvent),
  cursor: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "RequestEventList" })
export type RequestEventList = typeof RequestEventList.Type

/** The path of a request event: the URL path without its query (queries may carry secrets). */
export const eventPath = (url: URL): string => url.pathname

/** The host of a request event: `host` or `host:port` as the URL names it. */
export const eventHost = (url: URL): string => url.host

/** The list filters of `GET /api/v1/metrics/request-events`, by query name (API-CONVENTIONS "Request events"). */
export const requestEventFilterNames = [
  "namespace",
  "connectorId",
  "connectionId",
  "method",
  "statusCode",
  "statusCodeRange",
  "path",
  "response_source",
  "rate_limit_id",
  "labelSelector",
  "start",
  "end"
] as const
export type RequestEventFilterName = (typeof requestEventFilterNames)[number]

/** The decoded list filters; absent fields do not filter. */
export interface RequestEventFilter {
  readonly namespace?: NamespaceFilter | undefined
  readonly connectorId?: string | undefined
  readonly connectionId?: string | undefined
  /** Upper-case method name. */
  readonly method?: string | undefined
  /** Inclusive bounds; `statusCode` and `statusCodeRange` together intersect. */
  readonly statusCodes?: { readonly min: number; readonly max: number } | undefined
  /** Exact path, or with `prefix` every path starting with `value` (query text with a trailing `*`). */
  readonly path?: { readonly value: string; readonly prefix: boolean } | undefined
  readonly responseSource?: ResponseSource | undefined
  readonly rateLimitId?: string | undefined
  readonly selector?: Selector | undefined
  /** Inclusive lower bound of `timestamp`. */
  readonly start?: Date | undefined
  /** Exclusive upper bound of `timestamp`. */
  readonly end?: Date | undefined
}

type Parsed<A> = { readonly ok: true; readonly value: A } | { readonly ok: false; readonly message: string }
const ok = <A>(value: A): Parsed<A> => ({ ok: true, value })
const problem = (message: string): Parsed<never> => ({ ok: false, message })

const statusPattern = /^[1-5][0-9]{2}$/
const parseStatus = (text: string): number | undefined => (statusPattern.test(text) ? Number(text) : undefined)

// A date, or a date-time with seconds optional, fractions optional and a zone required.
const isoPattern = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/

/** An ISO 8601 timestamp (`2025-01-31`, `2025-01-31T12:00:00Z`, `…T12:00:00.5+02:00`) as a Date. */
export const parseIsoTimestamp = (text: string): Date | undefined => {
  if (!isoPattern.test(text)) return undefined
  const [year, month, day] = text.slice(0, 10).split("-").map(Number) as [number, number, number]
  // Date.parse rolls 2025-02-30 over into March; a day the month does not have is rejected.
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) return undefined
  const millis = Date.parse(text)
  return Number.isFinite(millis) ? new Date(millis) : undefined
}

const idMaxLength = 256
const plainText = (name: string) => (text: string) =>
  text.length === 0 || text.length > idMaxLength ? problem(`${name} is 1 to ${idMaxLength} characters`) : ok(text)

const timestamp = (text: string) => {
  const date = parseIsoTimestamp(text)
  return date === undefined
    ? problem("expected an ISO 8601 timestamp such as 2025-01-31T12:00:00Z (a time needs Z or an offset)")
    : ok(date)
}

/** One parser per filter: query text → value, or why the text is rejected. */
const filterParsers = {
  namespace: (text: string) => {
    const filter = parseNamespaceFilter(text)
    return filter === undefined
      ? problem("expected a namespace path such as root.acme or a subtree matcher such as root.acme.**")
      : ok(filter)
  },
  connectorId: plainText("connectorId"),
  connectionId: plainText("connectionId"),
  method: (text: string) =>
    /^[A-Za-z][A-Za-z-]{0,31}$/.test(text) ? ok(text.toUpperCase()) : problem("expected an HTTP method such as GET"),
  statusCode: (text: string) => {
    const code = parseStatus(text)
    return code === undefined ? problem("expected a status code from 100 to 599") : ok({ min: code, max: code })
  },
  statusCodeRange: (text: string) => {
    const [low, high, ...rest] = text.split("-")
    const min = parseStatus(low ?? "")
    const max = parseStatus(high ?? "")
    return min === undefined || max === undefined || rest.length > 0 || min > max
      ? problem("expected an inclusive range of status codes such as 200-299")
      : ok({ min, max })
  },
  path: (text: string) => {
    if (!text.startsWith("/")) return problem("expected a path starting with '/', optionally ending in '*'")
    return text.endsWith("*") ? ok({ value: text.slice(0, -1), prefix: true }) : ok({ value: text, prefix: false })
  },
  response_source: (text: string) =>
    ResponseSource.literals.some((source) => source === text)
      ? ok(text as ResponseSource)
      : problem(`expected one of ${ResponseSource.literals.join(", ")}`),
  rate_limit_id: plainText("rate_limit_id"),
  labelSelector: (text: string) => {
    const parsed = parseSelector(text)
    return Result.isSuccess(parsed) ? ok(parsed.success) : problem(parsed.failure.map(formatSelectorProblem).join("; "))
  },
  start: timestamp,
  end: timestamp
} satisfies Record<RequestEventFilterName, (text: string) => Parsed<unknown>>

/** Why `text` is not a valid value of filter `name`, or `undefined` when it is. */
export const requestEventFilterProblem = (name: RequestEventFilterName, text: string): string | undefined => {
  const parsed = filterParsers[name](text)
  return parsed.ok ? undefined : parsed.message
}

const isFilterName = (name: string): name is RequestEventFilterName =>
  (requestEventFilterNames as ReadonlyArray<string>).includes(name)

/**
 * Decodes list filters given as query texts by query name; fails with one problem per rejected
 * or unknown name (`field` is the query name).
 */
export const parseRequestEventFilter = (
  texts: Readonly<Record<string, string>>
): Result.Result<RequestEventFilter, ReadonlyArray<{ readonly field: string; readonly message: string }>> => {
  const problems: Array<{ readonly field: string; readonly message: string }> = []
  const values: Partial<Record<RequestEventFilterName, unknown>> = {}
  for (const [name, text] of Object.entries(texts)) {
    if (!isFilterName(name)) {
      problems.push({ field: name, message: "unknown filter" })
      continue
    }
    const parsed = filterParsers[name](text)
    if (parsed.ok) values[name] = parsed.value
    else problems.push({ field: name, message: parsed.message })
  }
  const v = values as {
    [K in RequestEventFilterName]?: Extract<ReturnType<(typeof filterParsers)[K]>, { ok: true }>["value"]
  }
  const exact = v.statusCode
  const range = v.statusCodeRange
  const statusCodes =
    exact !== undefined && range !== undefined
      ? { min: Math.max(exact.min, range.min), max: Math.min(exact.max, range.max) }
      : (exact ?? range)
  if (v.start !== undefined && v.end !== undefined && v.start.getTime() >= v.end.getTime()) {
    problems.push({ field: "end", message: "end must be later than start" })
  }
  if (problems.length > 0) return Result.fail(problems)
  return Result.succeed({
    namespace: v.namespace,
    connectorId: v.connectorId,
    connectionId: v.connectionId,
    method: v.method,
    statusCodes,
    path: v.path,
    responseSource: v.response_source,
    rateLimitId: v.rate_limit_id,
    selector: v.labelSelector,
    start: v.start,
    end: v.end
  })
}
