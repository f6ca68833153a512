/**
 * What the bench measures, as data: the targets (servers it can start), the load groups (one
 * request shape, measured on several targets at several connection counts, each compared with the
 * group's baseline target) and the sequence groups (a few requests on one seeded target, each sent
 * one at a time a fixed number of times). Add a scenario by adding a target and/or a group here;
 * run.ts and Report.ts need no change.
 */
import { listQueries, type SeedResult, startSeededSvc } from "./ListLatency.ts"
import { startNodeScript, startSvcReady, svcWorkspace } from "./Ready.ts"

/** A started server under test: where to send requests, and how to stop it. */
export interface RunningTarget {
  readonly origin: string
  readonly stop: () => Promise<void>
  /** Sent on every request to this target (e.g. the admin token's `authorization`). */
  readonly headers?: Readonly<Record<string, string>>
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

export interface LoadGroup {
  readonly id: string
  readonly title: string
  readonly method: "GET" | "POST"
  readonly path: string
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string
  /** Target ids, in table order. Must include `baseline`. */
  readonly targets: ReadonlyArray<string>
  /** Every other target's ratios are relative to this one at the same connection count. */
  readonly baseline: string
  readonly connections: ReadonlyArray<number>
}

export const targets: ReadonlyArray<Target> = [
  {
    id: "bare-node",
    label: "bare node:http",
    start: async () => {
      const child = await startNodeScript("./bareServer.ts")
      return { origin: `http://127.0.0.1:${child.port}`, stop: child.stop }
    }
  },
  {
    id: "svc-api",
    label: "svc api",
    start: async () => {
      const { dir, ports } = await svcWorkspace()
      const { svc } = await startSvcReady(dir, ports)
      return {
        origin: `http://127.0.0.1:${ports.api}`,
        stop: async () => {
          await svc.stop()
        }
      }
    }
  },
  {
    id: "svc-api-seeded",
    label: "svc api (seeded)",
    start: ({ progress, seedCount }) => startSeededSvc(seedCount, progress)
  }
  // Extension point: the proxy issues add targets here, e.g. an upstream started with
  // startNodeScript, "svc-proxy" (svc's public service proxying to it), "svc-proxy-raw",
  // a bare Node proxy, and nginx (throwing TargetUnavailable when `nginx` is not on PATH).
]

export const loadGroups: ReadonlyArray<LoadGroup> = [
  {
    id: "ping",
    title: "GET /ping",
    method: "GET",
    path: "/ping",
    targets: ["bare-node", "svc-api"],
    baseline: "bare-node",
    connections: [1, 64]
  }
  // Extension point: e.g. { id: "proxy", path: "/…", targets: ["upstream-direct", "svc-proxy",
  // "svc-proxy-raw", "node-proxy", "nginx"], baseline: "upstream-direct", connections: [1, 64] }.
]

/** Requests measured one at a time on one target: `warmup` unrecorded then `requests` recorded each. */
export interface SequenceGroup {
  readonly id: string
  readonly title: string
  readonly target: string
  /** In table order; each path is sent with the target's `headers`. */
  readonly queries: ReadonlyArray<{ readonly label: string; readonly path: string }>
  readonly warmup: number
  readonly requests: number
}

export const sequenceGroups: ReadonlyArray<SequenceGroup> = [
  {
    id: "list-connections",
    title: "GET /api/v1/connections?limit=100",
    target: "svc-api-seeded",
    queries: listQueries,
    warmup: 20,
    requests: 200
  }
]

export const findTarget = (id: string): Target => {
  const target = targets.find((t) => t.id === id)
  if (target === undefined) throw new Error(`bench: unknown target "${id}"`)
  return target
}
