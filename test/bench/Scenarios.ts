/**
 * What the bench measures, as data: the targets (servers it can start), the load groups (one
 * request shape, measured on several targets at several connection counts, each compared with the
 * group's baseline target), the stream groups (a large upload and server-sent events through each
 * target) and the sequence groups (a few requests on one seeded target, each sent one at a time a
 * fixed number of times). Add a scenario by adding a target and/or a group here; run.ts and
 * Report.ts need no change.
 */
import { pin } from "./Cpu.ts"
import { listQueries, startSeededSvc } from "./ListLatency.ts"
import { proxyJsonRequest, proxyTargets } from "./Proxy.ts"
import { sseEvents, upstreamPaths } from "./ProxyShapes.ts"
import { startNodeScript, startSvcReady, svcWorkspace } from "./Ready.ts"
import type { Target } from "./Target.ts"

export type { RequestShape, RunningTarget, StartContext, Target } from "./Target.ts"
export { TargetUnavailable } from "./Target.ts"

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

/**
 * Streaming through each target (after its routing): `upload.runs` POSTs of `upload.bytes` to an
 * upstream that drains them (MB/s, median), and `sse.samples` GETs of a server-sent event stream
 * (time to the first event, median), after `sse.warmup` unmeasured ones.
 */
export interface StreamGroup {
  readonly id: string
  readonly title: string
  readonly targets: ReadonlyArray<string>
  readonly baseline: string
  readonly upload: { readonly path: string; readonly bytes: number; readonly runs: number }
  readonly sse: { readonly path: string; readonly warmup: number; readonly samples: number; readonly events: number }
}

export const targets: ReadonlyArray<Target> = [
  {
    id: "bare-node",
    label: "bare node:http",
    start: async () => {
      const child = await startNodeScript("./bareServer.ts")
      pin(child.pid, "servers")
      return { origin: `http://127.0.0.1:${child.port}`, stop: child.stop }
    }
  },
  {
    id: "svc-api",
    label: "svc api",
    start: async () => {
      const { dir, ports } = await svcWorkspace()
      const { svc } = await startSvcReady(dir, ports)
      pin(svc.child.pid, "servers")
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
  },
  ...proxyTargets
]

/**
 * The proxy rows in table order; every ratio is against the bare undici proxy. svc's `_proxy_raw`
 * runs with 0, 1 and 10 matching rate-limit rules (`-r1`, `-r10`: a connection each) on the
 * embedded default and on PostgreSQL + Redis (`proxy-pg-raw*`, which also count the Redis
 * commands per request).
 */
const proxyRows = [
  "proxy-direct",
  "proxy-node",
  "proxy-nginx",
  "proxy-svc-raw",
  "proxy-svc-raw-r1",
  "proxy-svc-raw-r10",
  "proxy-svc-raw-otel",
  "proxy-svc",
  "proxy-pg-raw",
  "proxy-pg-raw-r1",
  "proxy-pg-raw-r10"
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
  },
  {
    id: "proxy",
    title: `proxy GET ${proxyJsonRequest.path}`,
    method: proxyJsonRequest.method,
    path: proxyJsonRequest.path,
    targets: proxyRows,
    baseline: "proxy-node",
    connections: [1, 64]
  }
]

export const streamGroups: ReadonlyArray<StreamGroup> = [
  {
    id: "proxy-stream",
    title: "proxy streaming",
    // `_proxy` answers an envelope, not a stream: not measured here; rules do not change a stream
    targets: ["proxy-direct", "proxy-node", "proxy-nginx", "proxy-svc-raw"],
    baseline: "proxy-node",
    upload: { path: upstreamPaths.upload, bytes: 100_000_000, runs: 3 },
    sse: { path: upstreamPaths.sse, warmup: 3, samples: 30, events: sseEvents }
  }
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
