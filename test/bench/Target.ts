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
