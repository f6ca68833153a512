/**
 * Hop-by-hop header removal (RFC 9110 7.6.1, SECURITY.md): applied to the request we send and to
 * the response we return, so neither leg's connection management leaks into the other.
 */

import { hopByHopHeaders } from "@svc/domain/ConnectorAuth"

/** The fixed hop-by-hop header names (lower case). */
export { hopByHopHeaders }

/** Adds the header names a `Connection` (or `Proxy-Connection`) value lists to `listed`, lower case. */
export const addConnectionTokens = (listed: Set<string>, value: unknown): void => {
  const values = Array.isArray(value) ? value : [value]
  for (const item of values) {
    if (typeof item !== "string") continue
    for (const token of item.split(",")) {
      const trimmed = token.trim().toLowerCase()
      if (trimmed !== "") listed.add(trimmed)
    }
  }
}

const listedInConnection = (headers: Readonly<Record<string, unknown>>): ReadonlySet<string> => {
  const listed = new Set<string>()
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase()
    if (lower === "connection" || lower === "proxy-connection") addConnectionTokens(listed, value)
  }
  return listed
}

/** A copy of `headers` without hop-by-hop headers and without the headers `Connection` lists. */
export const stripHopByHop = <V>(headers: Readonly<Record<string, V>>): Record<string, V> => {
  const listed = listedInConnection(headers)
  const out: Record<string, V> = {}
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase()
    if (hopByHopHeaders.has(lower) || listed.has(lower)) continue
    out[name] = value
  }
  return out
}
