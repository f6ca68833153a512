/**
 * The bound on the api's MCP sessions (docs/agents.md "Sessions and deployment").
 *
 * effect's `McpServer.layerHttp` keeps every session of the sessionful revisions (2025-11-25,
 * 2025-06-18, 2025-03-26) in the process that answered `initialize`, without expiry or cap; a
 * client that never sends `DELETE /mcp` would leave its session there until the process stops.
 * (effect cannot serve those revisions without a session: it issues `Mcp-Session-Id` on every
 * HTTP `initialize` and refuses later requests without one, and the SDK clients of today do not
 * speak the sessionless 2026-07-28 revision.) This table shadows effect's sessions and says which
 * to end: those idle longer than `mcp.session_idle_timeout`, and the least recently used beyond
 * `mcp.max_sessions`. `McpRoutes` ends them in effect's runtime the way `DELETE /mcp` does, so a
 * later request naming one is answered 404 and the client starts a new session (MCP Streamable
 * HTTP, "Session Management").
 *
 * A session also belongs to the actor that opened it: a request of another actor naming it is
 * answered as for an unknown session, so a session id is of no use to anyone else.
 */

/** `mcp.session_idle_timeout` and `mcp.max_sessions`, resolved. */
export interface McpSessionLimits {
  readonly idleTimeoutMs: number
  readonly maxSessions: number
}

interface Entry {
  readonly actorId: string
  lastSeenMs: number
  inFlight: number
}

/** What a request naming a session finds. */
export type SessionLookup = "ok" | "foreign" | "unknown"

/**
 * The sessions of one api process, least recently used first. Pure bookkeeping: the caller ends
 * the ids it returns in effect's runtime.
 */
export class McpSessionTable {
  readonly #entries = new Map<string, Entry>()
  readonly limits: McpSessionLimits

  constructor(limits: McpSessionLimits) {
    this.limits = limits
  }

  get size(): number {
    return this.#entries.size
  }

  /** A session `initialize` just opened; returns the ids evicted to keep within `maxSessions`. */
  open(id: string, actorId: string, nowMs: number): Array<string> {
    this.#entries.set(id, { actorId, lastSeenMs: nowMs, inFlight: 0 })
    const evicted: Array<string> = []
    while (this.#entries.size > this.limits.maxSessions) {
      const victim = this.#oldest(id)
      if (victim === undefined) break
      this.#entries.delete(victim)
      evicted.push(victim)
    }
    return evicted
  }

  /** A request names `id`: when it is the actor's session, it is in use until `end`. */
  begin(id: string, actorId: string, nowMs: number): SessionLookup {
    const entry = this.#entries.get(id)
    if (entry === undefined) return "unknown"
    if (entry.actorId !== actorId) return "foreign"
    entry.inFlight++
    this.#touch(id, entry, nowMs)
    return "ok"
  }

  /** The request that `begin` admitted is answered. */
  end(id: string, nowMs: number): void {
    const entry = this.#entries.get(id)
    if (entry === undefined) return
    entry.inFlight = Math.max(0, entry.inFlight - 1)
    this.#touch(id, entry, nowMs)
  }

  /** The client ended the session (`DELETE /mcp`). */
  close(id: string): void {
    this.#entries.delete(id)
  }

  /** Removes and returns the sessions idle longer than `idleTimeoutMs`, none with a request in flight. */
  expire(nowMs: number): Array<string> {
    const expired: Array<string> = []
    for (const [id, entry] of this.#entries) {
      // Least recently used first: the first one still fresh ends the scan.
      if (nowMs - entry.lastSeenMs <= this.limits.idleTimeoutMs) break
      if (entry.inFlight === 0) expired.push(id)
    }
    for (const id of expired) this.#entries.delete(id)
    return expired
  }

  #touch(id: string, entry: Entry, nowMs: number) {
    entry.lastSeenMs = nowMs
    // Re-inserting keeps the map in least-recently-used order.
    this.#entries.delete(id)
    this.#entries.set(id, entry)
  }

  /** The least recently used session other than `keep`: an idle one if any. */
  #oldest(keep: string): string | undefined {
    let busy: string | undefined
    for (const [id, entry] of this.#entries) {
      if (id === keep) continue
      if (entry.inFlight === 0) return id
      busy ??= id
    }
    return busy
  }
}
