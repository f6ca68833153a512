/**
 * Everything an outbound request must pass before it may be dispatched (SECURITY.md): scheme,
 * allowed host, IP-literal address class, method and header hygiene. Pure; shared by the buffered
 * `Outbound.send` and the streaming data plane, so both refuse exactly the same requests.
 */
import { isIP } from "node:net"
import type { Readable } from "node:stream"
import type { Dispatcher } from "undici"
import { hopByHopHeaders, listedInConnection } from "./HopByHop.ts"
import { hostAllowed } from "@svc/domain/ConnectorProxy"
import { addressAllowed } from "./HostPolicy.ts"
import { logSafeTarget, OutboundError, type OutboundErrorReason } from "./OutboundError.ts"

/** Where a request may go: the connector's `proxy.allowed_hosts` and `proxy.allow_private_networks`. */
export interface OutboundPolicy {
  readonly allowedHosts: ReadonlyArray<string>
  readonly allowPrivateNetworks: boolean
}

/** An upstream request after credential injection. */
export interface OutboundRequest {
  readonly method: string
  readonly url: URL
  readonly headers: Readonly<Record<string, string>>
  /** A buffered body, or a stream (the streaming data plane) sent as it arrives. */
  readonly body?: Uint8Array | string | Readable
  /** The declared length of a streamed body; absent sends it chunked. */
  readonly contentLength?: number
  /**
   * Ask the upstream for trailers (`TE: trailers`; `TE` itself is hop-by-hop and never copied):
   * set when the caller of `_proxy_raw` asked for them (issue 32 item 13).
   */
  readonly trailers?: boolean
}

/** A request that passed the guard, ready for the agent of its address policy. */
export interface PreparedOutbound {
  readonly allowPrivateNetworks: boolean
  /** Log-safe `scheme://host:port/path`. */
  readonly target: string
  readonly dispatch: Dispatcher.DispatchOptions
}

const tokenPattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
const headerValuePattern = /^[^\0\r\n]*$/

/** Methods that would echo injected credentials back (TRACE/TRACK) or open a tunnel (CONNECT). */
const refusedMethods: ReadonlySet<string> = new Set(["CONNECT", "TRACE", "TRACK"])

/** Request headers the client computes itself; a caller's copy would conflict or smuggle. */
const computedHeaders: ReadonlySet<string> = new Set(["host", "content-length", "expect"])

/** Checks `request` against `policy`; the prepared dispatch, or the reason it may not leave. */
export const prepareOutbound = (request: OutboundRequest, policy: OutboundPolicy): PreparedOutbound | OutboundError => {
  const url = request.url
  const target = logSafeTarget(url)
  const refuse = (reason: OutboundErrorReason, detail: string) => new OutboundError({ reason, target, detail })
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return refuse("host_not_allowed", "only http and https URLs are allowed")
  }
  if (url.username !== "" || url.password !== "") return refuse("invalid_request", "the URL must not carry user info")
  if (!hostAllowed(policy.allowedHosts, url)) {
    return refuse("host_not_allowed", "the host is not one of the connector's allowed hosts")
  }
  const literal = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
  if (isIP(literal) !== 0) {
    const verdict = addressAllowed(literal, policy.allowPrivateNetworks)
    if (!verdict.ok) return refuse("address_not_allowed", `the host is ${verdict.reason}`)
  }
  if (!tokenPattern.test(request.method) || request.method.length > 32) {
    return refuse("invalid_request", "the method is not a valid HTTP token")
  }
  if (refusedMethods.has(request.method.toUpperCase())) {
    return refuse("invalid_request", `the ${request.method.toUpperCase()} method is not allowed`)
  }
  // One walk: hop-by-hop and `Connection`-listed headers dropped, the rest checked and copied.
  const headers: Record<string, string> = {}
  const given = request.headers
  const listed = listedInConnection(given)
  for (const name in given) {
    const value = given[name] as string
    const lower = name.toLowerCase()
    if (hopByHopHeaders.has(lower) || listed.has(lower)) continue
    if (!tokenPattern.test(name) || !headerValuePattern.test(value)) {
      return refuse("invalid_request", "a request header name or value is invalid")
    }
    if (computedHeaders.has(lower)) continue
    headers[name] = value
  }
  if (request.contentLength !== undefined) headers["content-length"] = String(request.contentLength)
  if (request.trailers === true) headers.te = "trailers"
  return {
    allowPrivateNetworks: policy.allowPrivateNetworks,
    target,
    dispatch: {
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: request.method,
      headers,
      body: request.body ?? null
    }
  }
}
