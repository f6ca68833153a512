/**
 * The socket connector behind every outbound agent (SECURITY.md, DNS rebinding): it resolves the
 * host itself, refuses the connection unless EVERY resolved address passes `addressAllowed`, and
 * hands the socket only the addresses it checked, so a second DNS answer can never swap them.
 */
import { promises as dns, type LookupAddress, type LookupOptions } from "node:dns"
import { isIP } from "node:net"
import { buildConnector } from "undici"
import { addressAllowed } from "./HostPolicy.ts"

/** Resolves a host name to its addresses (every family). */
export type Resolver = (
  hostname: string
) => Promise<ReadonlyArray<{ readonly address: string; readonly family: number }>>

/** The operating system resolver (`getaddrinfo`, as `dns.lookup`), addresses in resolver order. */
export const systemResolver: Resolver = (hostname) => dns.lookup(hostname, { all: true, order: "verbatim" })

/** A connection the guard refused or could not resolve; carries no header, query or credential. */
export class OutboundConnectRefused extends Error {
  readonly code = "SVC_OUTBOUND_REFUSED"
  readonly reason: "address_not_allowed" | "dns_failed"
  constructor(reason: "address_not_allowed" | "dns_failed", message: string) {
    super(message)
    this.name = "OutboundConnectRefused"
    this.reason = reason
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | Array<LookupAddress>,
  family?: number
) => void

const wantedFamily = (family: LookupOptions["family"]): 0 | 4 | 6 =>
  family === 4 || family === "IPv4" ? 4 : family === 6 || family === "IPv6" ? 6 : 0

/** A `net.connect` lookup that only ever returns addresses the policy allows. */
export const guardedLookup =
  (resolve: Resolver, allowPrivateNetworks: boolean) =>
  (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (resolved) => {
        const addresses = resolved.filter((entry) => isIP(entry.address) !== 0)
        if (addresses.length === 0) {
          callback(new OutboundConnectRefused("dns_failed", `${hostname} has no address`), [])
          return
        }
        for (const { address } of addresses) {
          const verdict = addressAllowed(address, allowPrivateNetworks)
          if (!verdict.ok) {
            callback(new OutboundConnectRefused("address_not_allowed", `${hostname} resolves to ${verdict.reason}`), [])
            return
          }
        }
        const family = wantedFamily(options.family)
        const usable = addresses
          .map((entry) => ({ address: entry.address, family: isIP(entry.address) }))
          .filter((entry) => family === 0 || entry.family === family)
        const first = usable[0]
        if (first === undefined) {
          callback(new OutboundConnectRefused("dns_failed", `${hostname} has no IPv${family} address`), [])
        } else if (options.all === true) {
          callback(null, usable)
        } else {
          callback(null, first.address, first.family)
        }
      },
      (error: unknown) => {
        const code = typeof error === "object" && error !== null && "code" in error ? String(error.code) : "unknown"
        callback(new OutboundConnectRefused("dns_failed", `${hostname} could not be resolved (${code})`), [])
      }
    )
  }

/** Settings of one guarded connector; one per address policy. */
export interface GuardedConnectorOptions {
  readonly allowPrivateNetworks: boolean
  readonly resolve: Resolver
  /** Upper bound on any single socket connect; per-request connect timeouts are enforced by the caller. */
  readonly connectTimeoutMs: number
}

/** An undici connector that checks IP-literal hosts directly and every resolved address of a name. */
export const guardedConnector = (options: GuardedConnectorOptions): buildConnector.connector => {
  const base = buildConnector({
    timeout: options.connectTimeoutMs,
    allowH2: false,
    lookup: guardedLookup(options.resolve, options.allowPrivateNetworks)
  })
  return (connectOptions, callback) => {
    const hostname = connectOptions.hostname
    if (isIP(hostname) !== 0) {
      const verdict = addressAllowed(hostname, options.allowPrivateNetworks)
      if (!verdict.ok) {
        callback(new OutboundConnectRefused("address_not_allowed", `${hostname} is ${verdict.reason}`), null)
        return
      }
    }
    base(connectOptions, callback)
  }
}
