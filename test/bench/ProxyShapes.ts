/**
 * What the proxy upstream (`proxyUpstream.ts`) answers, shared with the bench that checks it:
 * paths, the small JSON body, and the server-sent events' count and spacing. Pure data.
 */

export const upstreamPaths = {
  /** Readiness, no credential needed. */
  ping: "/ping",
  /** GET: the small JSON body below. */
  json: "/json",
  /** GET, no credential needed: how many `GET /json` were answered so far (plain text). */
  count: "/count",
  /** POST: drains the body and answers `{"bytes": <count>}`. */
  upload: "/upload",
  /** GET: `sseEvents` events, the first at once, then one every `sseIntervalMs`. */
  sse: "/sse"
} as const

/** The GET answer (about 100 bytes): what a typical small upstream API call returns. */
export const upstreamJson = {
  ok: true,
  service: "bench-upstream",
  items: [
    { id: 1, name: "alpha" },
    { id: 2, name: "beta" }
  ]
} as const

export const sseEvents = 3
export const sseIntervalMs = 50

/** One event as written on the wire. */
export const sseEvent = (n: number): string => `id: ${n}\ndata: {"n":${n}}\n\n`
