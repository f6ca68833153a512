/**
 * The shape of a server the bench can measure: how it is started, where requests go, and how a
 * group's request is turned into what this target is sent (a proxy route wraps it). Pure types.
 */
import type { SeedResult } from "./ListLatency.ts"

/** One request of a group, before or after a target's routing. */
export interface RequestShape {
  readonly method: "GET" | "POST"
  /** Path and query on the target's origin. */
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string
}

/** Calls per command since the counter store started (Redis `INFO commandstats`), the bench's own reads excluded. */
export type CommandCounts = Readonly<Record<string, { readonly calls: number; readonly failed: number }>>

/** The commands one `MONITOR` connection saw, by who ran them. */
export interface MonitorCounts {
  /** Sent by clients (each one a round trip), per command. */
  readonly sent: CommandCounts
  /** Run by Lua scripts (`redis.call`), per command. */
  readonly inScripts: CommandCounts
}

/** A `MONITOR` connection: `stop` ends it and answers what it saw. */
export interface Monitor {
  readonly stop: () => Promise<MonitorCounts>
}

/**
 * How a target behind a Redis counter store is watched: the store's command counters and the
 * requests its upstream served, both read before and after each measured window of its rows.
 */
export interface StoreProbe {
  /** What the counter store is, for the table (e.g. `private redis-server 7.0.15`). */
  readonly label: string
  readonly commands: () => Promise<CommandCounts>
  /** Watches every command with `MONITOR` (costly for Redis: the bench uses it in warm-ups only). */
  readonly monitor: () => Promise<Monitor>
  /** Requests the upstream has served so far (every proxied request that went through). */
  readonly forwarded: () => Promise<number>
  /** Commands the idle server sent over a quiet window after set-up: the background noise. */
  readonly idle: { readonly ms: number; readonly commands: CommandCounts }
}

/** A started server under test: where to send requests, and how to stop it. */
export interface RunningTarget {
  readonly origin: string
  readonly stop: () => Promise<void>
  /** Sent on every request to this target (e.g. the admin token's `authorization`). */
  readonly headers?: Readonly<Record<string, string>>
  /**
   * What this target is sent for a group's request (e.g. svc's `_proxy_raw` puts the upstream URL
   * in a header and the route in the path); identity when absent.
   */
  readonly route?: (request: RequestShape) => RequestShape
  /** What `start` created before it returned, shown with the group. */
  readonly seed?: SeedResult
  /** Present when the target's counter store is a Redis the bench can read (commands per request). */
  readonly store?: StoreProbe
  /** The process under test, when the bench reads its CPU time and memory per row (svc targets). */
  readonly pid?: number | undefined
}

/** What `Target.start` gets from the run. */
export interface StartContext {
  /** A progress line on stderr (long starts, e.g. seeding, report every ~1000 rows). */
  readonly progress: (message: string) => void
  /** How many rows a seeding target creates (`--seed`). */
  readonly seedCount: number
}

export interface Target {
  readonly id: string
  /** Shown in the table. */
  readonly label: string
  /** Starts the target (child processes only: never serve from the bench process). */
  readonly start: (context: StartContext) => Promise<RunningTarget>
}

/**
 * Thrown by `Target.start` when the target cannot run on this machine (e.g. nginx not installed):
 * its rows are reported as skipped with the message, and the run goes on.
 */
export class TargetUnavailable extends Error {}
