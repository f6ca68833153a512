/**
 * The connector definition's `proxy` block (SECURITY "Credentials never leave where they
 * belong"): which upstream hosts a connection may reach, per-connector timeouts and the outbound
 * concurrency cap. Decoding materialises every default; an absent `allowed_hosts` allows nothing.
 */
import { Effect, Schema } from "effect"
import { PositiveDurationString, parseDuration } from "./Duration.ts"

const label = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/
const ipv4 = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/

/** The parts of an `allowed_hosts` entry. */
export interface HostPattern {
  /** `true` for `*.suffix`: any subdomain of `host` at any depth, never `host` itself. */
  readonly wildcard: boolean
  /** Lower-case host name, dotted IPv4, or bracketed IPv6 (`[::1]`). */
  readonly host: string
  /** Explicit port; `undefined` means the scheme's default port only. */
  readonly port: number | undefined
}

const hostNameProblem = (host: string, wildcard: boolean): string | undefined => {
  if (host !== host.toLowerCase()) return "must be lower-case"
  if (host.length === 0 || host.length > 253) return "a host name is 1 to 253 characters"
  if (host.endsWith(".")) return "must not end with '.'"
  const labels = host.split(".")
  if (!labels.every((part) => label.test(part))) {
    return "a host name is dot-separated labels of a-z, 0-9, '-' and '_' (at most 63 characters each)"
  }
  if (wildcard && labels.length < 2) return "a wildcard needs a suffix of at least two labels, e.g. *.example.com"
  return undefined
}

/** Parses an `allowed_hosts` entry: `host`, `host:port`, `*.suffix`, `*.suffix:port`, `1.2.3.4`, `[::1]:8443`. */
export const parseHostPattern = (text: string): HostPattern | string => {
  if (text.length === 0 || text.length > 300) return "must be 1 to 300 characters"
  const wildcard = text.startsWith("*.")
  const rest = wildcard ? text.slice(2) : text
  let host = rest
  let portText: string | undefined
  if (rest.startsWith("[")) {
    if (wildcard) return "a wildcard cannot apply to an IP address"
    const close = rest.indexOf("]")
    if (close === -1) return "an IPv6 address must be closed with ']'"
    host = rest.slice(0, close + 1)
    const after = rest.slice(close + 1)
    if (after !== "" && !after.startsWith(":")) return "unexpected characters after the IPv6 address"
    if (after !== "") portText = after.slice(1)
    let parsed: URL
    try {
      parsed = new URL(`http://${host}/`)
    } catch {
      return "not a valid IPv6 address"
    }
    if (parsed.hostname !== host) return `write the IPv6 address in its canonical form ${parsed.hostname}`
  } else {
    const colon = rest.lastIndexOf(":")
    if (colon !== -1) {
      host = rest.slice(0, colon)
      portText = rest.slice(colon + 1)
    }
    if (ipv4.test(host)) {
      if (wildcard) return "a wildcard cannot apply to an IP address"
    } else {
      if (/^[\d.]+$/.test(host)) return "not a valid IPv4 address"
      const problem = hostNameProblem(host, wildcard)
      if (problem !== undefined) return problem
    }
  }
  if (portText === undefined) return { wildcard, host, port: undefined }
  if (!/^[1-9]\d{0,4}$/.test(portText) || Number(portText) > 65535) return "a port is an integer from 1 to 65535"
  return { wildcard, host, port: Number(portText) }
}

const defaultPorts: Record<string, string> = { "http:": "80", "https:": "443" }

/**
 * True when `url`'s host and port are allowed by `patterns` (exact host or `*.suffix` at any depth,
 * never the bare suffix); an entry without a port allows only the scheme's default port.
 */
export const hostAllowed = (patterns: ReadonlyArray<string>, url: URL): boolean => {
  const port = url.port === "" ? defaultPorts[url.protocol] : url.port
  if (port === undefined) return false
  return patterns.some((text) => {
    const pattern = parseHostPattern(text)
    if (typeof pattern === "string") return false
    if (String(pattern.port ?? defaultPorts[url.protocol]) !== port) return false
    return pattern.wildcard ? url.hostname.endsWith(`.${pattern.host}`) : url.hostname === pattern.host
  })
}

/** One `allowed_hosts` entry. */
export const AllowedHost = Schema.String.check(
  Schema.makeFilter(
    (text: string) => {
      const parsed = parseHostPattern(text)
      return typeof parsed === "string" ? parsed : true
    },
    { expected: "a host name, *.suffix wildcard or IP address, optionally with :port" }
  )
)

const durationAtMost = (maxMs: number, text: string) =>
  PositiveDurationString.check(
    Schema.makeFilter((value: string) => (parseDuration(value) ?? 0) <= maxMs, { message: `must be at most ${text}` })
  )

const ms = (text: string) => parseDuration(text) ?? 0

/** `proxy.timeouts`: connect, time to the first response byte, and the whole exchange. */
export const ProxyTimeouts = Schema.Struct({
  connect: durationAtMost(60_000, "60s").pipe(Schema.withDecodingDefaultKey(Effect.succeed("5s"))),
  first_byte: durationAtMost(3_600_000, "1h").pipe(Schema.withDecodingDefaultKey(Effect.succeed("30s"))),
  total: durationAtMost(86_400_000, "1d").pipe(Schema.withDecodingDefaultKey(Effect.succeed("60s")))
})
  .check(
    Schema.makeFilter(
      (timeouts) => [
        ...(ms(timeouts.connect) > ms(timeouts.total) ? [{ path: ["connect"], issue: "must not exceed total" }] : []),
        ...(ms(timeouts.first_byte) > ms(timeouts.total)
          ? [{ path: ["first_byte"], issue: "must not exceed total" }]
          : [])
      ],
      { expected: "connect and first_byte within total" }
    )
  )
  .annotate({ identifier: "ProxyTimeouts" })
export type ProxyTimeouts = typeof ProxyTimeouts.Type

/** The `proxy` block: everything materialised, `allowed_hosts: []` allows nothing. */
export const ConnectorProxy = Schema.Struct({
  allowed_hosts: Schema.Array(AllowedHost).pipe(
    Schema.check(
      Schema.isMaxLength(100, { message: "must list at most 100 hosts" }),
      Schema.makeFilter(
        (hosts: ReadonlyArray<string>) =>
          hosts.flatMap((host, index) =>
            hosts.indexOf(host) < index ? [{ path: [index], issue: "must not repeat a host" }] : []
          ),
        { expected: "unique hosts" }
      )
    ),
    Schema.withDecodingDefaultKey(Effect.succeed([]))
  ),
  allow_private_networks: Schema.Boolean.pipe(Schema.withDecodingDefaultKey(Effect.succeed(false))),
  timeouts: ProxyTimeouts.pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
  max_concurrent_requests: Schema.Int.check(
    Schema.isBetween({ minimum: 1, maximum: 10_000 }, { message: "must be an integer from 1 to 10000" })
  ).pipe(Schema.withDecodingDefaultKey(Effect.succeed(16)))
}).annotate({ identifier: "ConnectorProxy" })
export type ConnectorProxy = typeof ConnectorProxy.Type

/** The `proxy` block of a definition that omits it. */
export const defaultConnectorProxy: ConnectorProxy = {
  allowed_hosts: [],
  allow_private_networks: false,
  timeouts: { connect: "5s", first_byte: "30s", total: "60s" },
  max_concurrent_requests: 16
}
