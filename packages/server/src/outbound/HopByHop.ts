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

const noneListed: ReadonlySet<string> = new Set()

// `for … in` over plain header records (no `[name, value]` pair per header: one walk per request).

/** The header names `Connection` (or `Proxy-Connection`) of `headers` lists, lower case. */
export const listedInConnection = (headers: Readonly<Record<string, unknown>>): ReadonlySet<string> => {
  let listed: Set<string> | undefined
  for (const name in headers) {
    const lower = name.toLowerCase()
    if (lower === "connection" || lower === "proxy-connection") {
      listed ??= new Set<string>()
      addConnectionTokens(listed, headers[name])
    }
  }
  return listed ?? noneListed
}

/** A copy of `headers` without hop-by-hop headers and without the headers `Connection` lists. */
export const stripHopByHop = <V>(headers: Readonly<Record<string, V>>): Record<string, V> => {
  const listed = listedInConnection(headers)
  const out: Record<string, V> = {}
  for (const name in headers) {
    const lower = name.toLowerCase()
    if (hopByHopHeaders.has(lower) || listed.has(lower)) continue
    out[name] = headers[name] as V
  }
  return out
}
