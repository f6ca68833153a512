/**
 * The outbound limits of a connector (SECURITY.md "Credentials never leave where they belong",
 * "Limits on every input"): allowed hosts, private-network access and timeouts come from the
 * definition; the server configuration may additionally open private networks.
 */
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { parseDuration } from "@svc/domain/Duration"
import type { SendOptions } from "./Outbound.ts"

/** Response bodies the service itself reads (probes, token endpoints) are small. */
export const maxServiceResponseBytes = 1024 * 1024

const ms = (duration: string, fallback: number) => parseDuration(duration) ?? fallback

/** Options for requests to the connector's upstream (probes; the proxy applies the same policy). */
export const upstreamOptions = (
  definition: ConnectorDefinition,
  serverAllowsPrivateNetworks: boolean,
  totalMs?: number
): SendOptions => {
  const { proxy } = definition
  const total = Math.min(ms(proxy.timeouts.total, 60_000), totalMs ?? Number.POSITIVE_INFINITY)
  return {
    policy: {
      allowedHosts: proxy.allowed_hosts,
      allowPrivateNetworks: proxy.allow_private_networks || serverAllowsPrivateNetworks
    },
    timeouts: {
      connectMs: Math.min(ms(proxy.timeouts.connect, 5_000), total),
      firstByteMs: Math.min(ms(proxy.timeouts.first_byte, 30_000), total),
      totalMs: total
    },
    maxResponseBytes: maxServiceResponseBytes
  }
}

/**
 * Options for the connector's own OAuth2 endpoints: the definition names them, so their host is
 * allowed as written; address checks (link-local, metadata, private networks) still apply.
 */
export const endpointOptions = (
  definition: ConnectorDefinition,
  endpoint: string,
  serverAllowsPrivateNetworks: boolean
): SendOptions => {
  const base = upstreamOptions(definition, serverAllowsPrivateNetworks)
  return { ...base, policy: { ...base.policy, allowedHosts: [new URL(endpoint).host] } }
}
