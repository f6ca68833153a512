/**
 * The connector definition's `probes[]` (spec 3.1, 4.2): health checks sent through a connection
 * with its credentials. A URL or header value may name configuration keys as `{{cfg.<key>}}`;
 * `expected_statuses` absent means any 2xx counts; `period` absent means on demand only.
 */
import { Effect, Schema } from "effect"
import { HeaderName } from "./ConnectorAuth.ts"
import { PositiveDurationString, parseDuration } from "./Duration.ts"

/** A setup-step id or probe id: 1 to 63 of `a-z`, `0-9`, `_`, `-`. */
export const Slug = Schema.String.check(
  Schema.isPattern(/^[a-z0-9_-]{1,63}$/, { message: "must be 1 to 63 characters of a-z, 0-9, '_' or '-'" })
)

const placeholder = /\{\{\s*cfg\.([A-Za-z_][A-Za-z0-9_]{0,62})\s*\}\}/g

/** The configuration keys a probe URL or header value names through `{{cfg.<key>}}`. */
export const placeholderKeys = (text: string): ReadonlyArray<string> =>
  Array.from(text.matchAll(placeholder), (match) => match[1] ?? "")

/** Replaces each `{{cfg.<key>}}` with `value(key)`; other text is unchanged. */
export const fillPlaceholders = (text: string, value: (key: string) => string): string =>
  text.replace(placeholder, (_, key: string) => value(key))

const templateProblem = (text: string): string | undefined => {
  const rest = fillPlaceholders(text, () => "")
  return rest.includes("{{") || rest.includes("}}")
    ? "a placeholder is written {{cfg.<key>}} with a configuration key of letters, digits and '_'"
    : undefined
}

const parseUrl = (text: string): URL | undefined => {
  try {
    return new URL(text)
  } catch {
    return undefined
  }
}

/**
 * A probe URL with its placeholders filled by digits (valid in a host, a port or a path), or
 * `undefined` when that does not parse; `hostIsFixed` is false when a placeholder sits in the host or port.
 */
export const probeUrlShape = (text: string): { readonly url: URL; readonly hostIsFixed: boolean } | undefined => {
  const url = parseUrl(fillPlaceholders(text, () => "0"))
  const other = parseUrl(fillPlaceholders(text, () => "1"))
  if (url === undefined || other === undefined) return undefined
  return { url, hostIsFixed: url.host === other.host }
}

/** A probe URL: absolute http(s) once placeholders are filled, no user info, no fragment. */
export const ProbeUrl = Schema.String.check(
  Schema.isMaxLength(2048, { message: "must be at most 2048 characters" }),
  Schema.makeFilter(
    (text: string) => {
      const problem = templateProblem(text)
      if (problem !== undefined) return problem
      const url = probeUrlShape(text)?.url
      if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
        return "must be an absolute http or https URL"
      }
      if (url.username !== "" || url.password !== "") return "must not carry credentials"
      if (url.hash !== "") return "must not have a fragment"
      return true
    },
    { expected: "an absolute http or https URL" }
  )
)

/** Header names a probe may not set: the service owns them. */
export const reservedProbeHeaders: ReadonlyArray<string> = [
  "authorization",
  "proxy-authorization",
  "cookie",
  "host",
  "content-length",
  "transfer-encoding",
  "connection"
]

const ProbeHeaders = Schema.Record(HeaderName, Schema.String).check(
  Schema.makeFilter(
    (headers: Readonly<Record<string, string>>) => {
      const problems: Array<{ path: ReadonlyArray<PropertyKey>; issue: string }> = []
      for (const [name, value] of Object.entries(headers)) {
        const lower = name.toLowerCase()
        if (reservedProbeHeaders.includes(lower) || lower.startsWith("x-svc-")) {
          problems.push({ path: [name], issue: "is set by the service and cannot be configured" })
        } else if (!/^[\t\x20-\x7e]{0,4096}$/.test(value)) {
          problems.push({ path: [name], issue: "a header value is at most 4096 printable ASCII characters" })
        } else {
          const problem = templateProblem(value)
          if (problem !== undefined) problems.push({ path: [name], issue: problem })
        }
      }
      return problems
    },
    { expected: "probe headers" }
  ),
  Schema.isMaxProperties(32, { message: "must have at most 32 headers" })
)

const durationBetween = (minMs: number, maxMs: number, text: string) =>
  PositiveDurationString.check(
    Schema.makeFilter(
      (value: string) => {
        const ms = parseDuration(value) ?? 0
        return (ms >= minMs && ms <= maxMs) || `must be between ${text}`
      },
      { expected: `a duration between ${text}` }
    )
  )

const threshold = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: 100 }, { message: "must be an integer from 1 to 100" })
)

/** One probe; decoding fills `method`, `timeout`, `enabled` and both thresholds. */
export const ConnectorProbe = Schema.Struct({
  id: Slug,
  description: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(1000))),
  method: Schema.String.check(
    Schema.isPattern(/^[A-Z]{1,16}$/, { message: "must be an upper-case HTTP method such as GET or HEAD" })
  ).pipe(Schema.withDecodingDefaultKey(Effect.succeed("GET"))),
  url: ProbeUrl,
  headers: Schema.optionalKey(ProbeHeaders),
  expected_statuses: Schema.optionalKey(
    Schema.Array(
      Schema.Int.check(
        Schema.isBetween({ minimum: 100, maximum: 599 }, { message: "must be an integer from 100 to 599" })
      )
    ).check(
      Schema.isMinLength(1, { message: "must not be empty; omit expected_statuses to accept any 2xx" }),
      Schema.isMaxLength(50, { message: "must list at most 50 statuses" }),
      Schema.isUnique({ message: "must not repeat a status" })
    )
  ),
  timeout: durationBetween(1, 60_000, "1ms and 60s").pipe(Schema.withDecodingDefaultKey(Effect.succeed("10s"))),
  period: Schema.optionalKey(durationBetween(1_000, 31 * 86_400_000, "1s and 31d")),
  enabled: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(true))),
  /** Runs at the end of interactive setup: the connection becomes `configured` only when it succeeds. */
  verify: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false))),
  failure_threshold: threshold.pipe(Schema.withDecodingDefaultKey(Effect.succeed(3))),
  recovery_threshold: threshold.pipe(Schema.withDecodingDefaultKey(Effect.succeed(1)))
}).annotate({ identifier: "ConnectorProbe" })
export type ConnectorProbe = typeof ConnectorProbe.Type

/** True when `status` counts as a success for `probe` (any 2xx when `expected_statuses` is absent). */
export const probeStatusOk = (probe: Pick<ConnectorProbe, "expected_statuses">, status: number): boolean =>
  probe.expected_statuses === undefined ? status >= 200 && status <= 299 : probe.expected_statuses.includes(status)
