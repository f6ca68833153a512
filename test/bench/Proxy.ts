/**
 * The proxy data plane targets (issue 6 item 7): the upstream hit directly, a bare undici proxy
 * (the framework floor), nginx `proxy_pass` (when installed), svc's `_proxy_raw` with 0, 1 and 10
 * matching rate-limit rules and `_proxy` on the embedded default, and `_proxy_raw` with 0, 1 and 10
 * rules on PostgreSQL + Redis (`Production.ts`), with a connector whose api-key credential is
 * injected as a bearer. The proxies share one upstream (pinned beside the load generator); each
 * server under test is pinned to the servers' CPUs. Every target checks one request end to end
 * before it is measured, and a svc target also that its request event lists its rule count.
 */
import { randomBytes } from "node:crypto"
import { isDeepStrictEqual } from "node:util"
import { Pool } from "undici"
import { type CpuRole, pin } from "./Cpu.ts"
import { poster } from "./ListLatency.ts"
import { runLoad } from "./Load.ts"
import { nginxBinary, startNginx } from "./Nginx.ts"
import { startProductionSvc } from "./Production.ts"
import { upstreamJson, upstreamPaths } from "./ProxyShapes.ts"
import { readToken, startNodeScript, startSvcReady, svcWorkspace } from "./Ready.ts"
import { type RequestShape, type RunningTarget, type StoreProbe, type Target, TargetUnavailable } from "./Target.ts"

/** The upstream credential every proxy injects: random per run, never printed. */
const apiKey = `bench${randomBytes(16).toString("hex")}`

/** The request of the proxy load group, also used to check each target before it is measured. */
export const proxyJsonRequest: RequestShape = { method: "GET", path: upstreamPaths.json, headers: {} }

interface Lease<A> {
  readonly value: A
  readonly release: () => Promise<void>
}

/** One instance for every concurrent user: started on the first acquire, stopped on the last release. */
const shared = <A>(start: () => Promise<A>, stop: (value: A) => Promise<void>): (() => Promise<Lease<A>>) => {
  let current: Promise<A> | undefined
  let users = 0
  const leave = async () => {
    users--
    if (users > 0 || current === undefined) return
    const value = current
    current = undefined
    await value.then(stop, () => undefined)
  }
  return async () => {
    users++
    current ??= start()
    try {
      const value = await current
      let released = false
      const release = async () => {
        if (released) return
        released = true
        await leave()
      }
      return { value, release }
    } catch (error) {
      await leave()
      throw error
    }
  }
}

interface Upstream {
  readonly origin: string
  readonly stop: () => Promise<void>
}

export const startUpstream = async (role: CpuRole): Promise<Upstream> => {
  const child = await startNodeScript("./proxyUpstream.ts", { BENCH_API_KEY: apiKey })
  pin(child.pid, role)
  return { origin: `http://127.0.0.1:${child.port}`, stop: child.stop }
}

/** The upstream behind every proxy: beside the load generator, so the proxy has its CPU alone. */
const sharedUpstream = shared(
  () => startUpstream("generator"),
  (upstream) => upstream.stop()
)

type Check = (status: number, text: string) => string | undefined

const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

const plainJson: Check = (status, text) => {
  if (status !== 200) return `answered ${status}: ${text.slice(0, 200)}`
  return isDeepStrictEqual(parsed(text), upstreamJson) ? undefined : `answered another body: ${text.slice(0, 200)}`
}

const envelope: Check = (status, text) => {
  if (status !== 200) return `answered ${status}: ${text.slice(0, 200)}`
  const body = (parsed(text) ?? {}) as { statusCode?: unknown; bodyJson?: unknown }
  if (body.statusCode !== 200) return `the upstream answered ${String(body.statusCode)} in the envelope`
  return isDeepStrictEqual(body.bodyJson, upstreamJson)
    ? undefined
    : `the envelope holds another body: ${text.slice(0, 200)}`
}

/** Sends the group's request once through the target; throws with what was wrong. */
const verify = async (label: string, running: RunningTarget, check: Check): Promise<void> => {
  const request = (running.route ?? ((r: RequestShape) => r))({
    ...proxyJsonRequest,
    headers: { ...proxyJsonRequest.headers, ...running.headers }
  })
  const pool = new Pool(running.origin, { connections: 1, headersTimeout: 10_000, bodyTimeout: 10_000 })
  try {
    const response = await pool.request({
      method: request.method,
      path: request.path,
      headers: request.headers,
      ...(request.body === undefined ? {} : { body: request.body })
    })
    const text = await response.body.text()
    if (response.statusCode === 404 && request.path.startsWith("/api/")) {
      const route = request.path.replace(/connections\/[^/]+\//, "connections/{id}/")
      throw new TargetUnavailable(`svc answered 404 on ${request.method} ${route}: the route is not in this build`)
    }
    const problem = check(response.statusCode, text)
    if (problem !== undefined) throw new Error(`${label} check: GET ${upstreamPaths.json} ${problem}`)
  } finally {
    await pool.destroy()
  }
}

/** Starts a proxy in front of the shared upstream, checks it, and releases the upstream on stop. */
const proxyTarget = (
  id: string,
  label: string,
  start: (upstreamOrigin: string) => Promise<{ readonly port: number; readonly stop: () => Promise<void> }>
): Target => ({
  id,
  label,
  start: async () => {
    const upstream = await sharedUpstream()
    try {
      const proxy = await start(upstream.value.origin)
      const running: RunningTarget = {
        origin: `http://127.0.0.1:${proxy.port}`,
        stop: async () => {
          await proxy.stop()
          await upstream.release()
        }
      }
      await verify(label, running, plainJson).catch(async (error: unknown) => {
        await proxy.stop()
        throw error
      })
      return running
    } catch (error) {
      await upstream.release()
      throw error
    }
  }
})

/** The `_proxy_raw` rows' rule sets: every rule of a set matches every request of its connection. */
export const ruleCounts = [0, 1, 10] as const
export type RuleCount = (typeof ruleCounts)[number]

/** A svc process with the bench connections, as the `_proxy_raw` and `_proxy` targets use it. */
export interface ProxySvc {
  readonly origin: string
  /** The `authorization` header value of an actor allowed everything. */
  readonly authorization: string
  /** One connection per rule set, each in a namespace no other set's rules reach. */
  readonly connections: Readonly<Record<RuleCount, string>>
  readonly upstreamOrigin: string
  readonly store?: StoreProbe
  /** The svc process (CPU time and memory per row). */
  readonly pid?: number | undefined
  readonly stop: () => Promise<void>
}

const benchNamespace = "root.proxybench"

/**
 * Where each rule set lives: the connection's namespace and the namespaces of its rules. The 0-rule
 * connection sits in `root.proxybench`, which holds no rule; the 1- and 10-rule connections sit in
 * children of it (`r1`, `r10.leaf`), so no set's rules reach another's connection. Half of the 10
 * rules are on the connection's parent (`r10`): rules at several levels stack (spec 4.6 rule 1).
 */
const connectionNamespace: Readonly<Record<RuleCount, string>> = {
  0: benchNamespace,
  1: `${benchNamespace}.r1`,
  10: `${benchNamespace}.r10.leaf`
}

/** Limits no bench row can reach: the rules count every request and never reject one. */
const huge = 1_000_000_000

/** The label of the 10-rule connection, used by a label selector and by label dimensions. */
const benchLabel = { tier: "bench" } as const

interface RuleSpec {
  readonly namespace: string
  readonly definition: Record<string, unknown>
}

const rule = (namespace: string, definition: Record<string, unknown>): RuleSpec => ({ namespace, definition })

/**
 * The rules of each set (`POST /api/v1/rate-limits`), all matching `GET /json` through the set's
 * connection. The 10 mix both modes, the three algorithms (both sliding-window modes), global and
 * per-dimension buckets (connection, method, actor, connector and version, namespace, a label) and
 * every selector kind (label selector, methods, prefix, glob and regex path, request types).
 */
export const benchRules: Readonly<Record<RuleCount, ReadonlyArray<RuleSpec>>> = {
  0: [],
  1: [
    rule(connectionNamespace[1], {
      mode: "enforce",
      selector: {},
      bucket: { dimensions: ["connection"] },
      algorithm: { fixed_window: { window: "1m", limit: huge } }
    })
  ],
  10: [
    ...[
      {
        mode: "enforce",
        bucket: { dimensions: ["connection"] },
        algorithm: { fixed_window: { window: "1m", limit: huge } }
      },
      {
        mode: "enforce",
        bucket: { dimensions: [] },
        algorithm: { token_bucket: { capacity: huge, refill_rate: 1e6 } }
      },
      {
        mode: "enforce",
        bucket: { dimensions: ["method"] },
        algorithm: { sliding_window: { window: "1m", limit: huge, mode: "counter" } }
      },
      {
        // the log keeps every request of its window: the shortest window keeps it small
        mode: "observe",
        bucket: { dimensions: ["connection"] },
        algorithm: { sliding_window: { window: "1s", limit: huge, mode: "log" } }
      },
      { mode: "observe", bucket: { dimensions: ["actor"] }, algorithm: { fixed_window: { window: "1h", limit: huge } } }
    ].map((d) => rule(`${benchNamespace}.r10`, { selector: {}, ...d })),
    ...[
      {
        mode: "enforce",
        selector: { label_selector: "tier=bench" },
        bucket: { dimensions: ["labels/tier"] },
        algorithm: { token_bucket: { capacity: huge, refill_rate: 1e6 } }
      },
      {
        mode: "enforce",
        selector: { methods: ["GET"] },
        bucket: { dimensions: ["connector", "connector_version"] },
        algorithm: { fixed_window: { window: "1m", limit: huge } }
      },
      {
        mode: "enforce",
        selector: { path_match: { kind: "prefix", value: upstreamPaths.json } },
        bucket: { dimensions: ["namespace"] },
        algorithm: { sliding_window: { window: "10s", limit: huge, mode: "counter" } }
      },
      {
        mode: "observe",
        selector: { path_match: { kind: "glob", value: "/*" } },
        bucket: { dimensions: ["connection", "method"] },
        algorithm: { token_bucket: { capacity: huge, refill_rate: 1e6 } }
      },
      {
        mode: "enforce",
        selector: { path_match: { kind: "regex", value: "^/js" }, request_types: ["proxy"] },
        bucket: { dimensions: ["labels/tier", "actor"] },
        algorithm: { fixed_window: { window: "1s", limit: huge } }
      }
    ].map((d) => rule(connectionNamespace[10], d))
  ]
}

/**
 * The bench's namespaces, a published api-key (bearer) connector allowed to reach the upstream, one
 * connection per rule set and the rules, through the api of `origin` (the process that writes a
 * rule reloads its rule cache at once, so the rules apply to its next request).
 */
export const createBenchConnections = async (
  origin: string,
  authorization: string,
  upstreamOrigin: string
): Promise<Record<RuleCount, string>> => {
  const pool = new Pool(origin, { connections: 1 })
  const post = poster(pool, { authorization, "content-type": "application/json" })
  try {
    for (const path of [benchNamespace, `${benchNamespace}.r1`, `${benchNamespace}.r10`, connectionNamespace[10]])
      await post("POST", "/api/v1/namespaces", { path }, 201)
    const definition = {
      type: "bench-proxy",
      auth: { type: "api_key", placement: "bearer" },
      proxy: {
        allowed_hosts: [new URL(upstreamOrigin).host],
        allow_private_networks: true,
        // the default (16 in flight per connection) would throttle the 64-connection rows
        max_concurrent_requests: 1024
      }
    }
    const connector = (await post("POST", "/api/v1/connectors", { namespace: benchNamespace, definition }, 201)) as {
      readonly id: string
    }
    await post("PUT", `/api/v1/connectors/${connector.id}/versions/1/_state`, { state: "primary" }, 200)
    const connections = { 0: "", 1: "", 10: "" }
    for (const count of ruleCounts) {
      const body = {
        connectorId: connector.id,
        namespace: connectionNamespace[count],
        credentials: { api_key: apiKey },
        ...(count === 10 ? { labels: benchLabel } : {})
      }
      connections[count] = ((await post("POST", "/api/v1/connections", body, 201)) as { readonly id: string }).id
      for (const spec of benchRules[count]) await post("POST", "/api/v1/rate-limits", spec, 201)
    }
    return connections
  } finally {
    await pool.destroy()
  }
}

interface EventPage {
  readonly items?: ReadonlyArray<{ readonly rate_limit_matched?: ReadonlyArray<unknown> | null }>
}

/**
 * How many rules matched the latest request event of `connectionId` (the event of the check
 * request), polled until it is listed (events are written in batches), 20 s at most.
 */
const matchedRules = async (svc: ProxySvc, connectionId: string): Promise<number> => {
  const pool = new Pool(svc.origin, { connections: 1 })
  const query = new URLSearchParams({ connectionId, limit: "1" })
  const deadline = Date.now() + 20_000
  try {
    for (;;) {
      const response = await pool.request({
        method: "GET",
        path: `/api/v1/metrics/request-events?${query}`,
        headers: { authorization: svc.authorization }
      })
      const text = await response.body.text()
      if (response.statusCode !== 200) throw new Error(`request events answered ${response.statusCode}: ${text}`)
      const event = (parsed(text) as EventPage | undefined)?.items?.[0]
      if (event !== undefined) return event.rate_limit_matched?.length ?? 0
      if (Date.now() > deadline) throw new Error(`no request event of connection ${connectionId} within 20 s`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  } finally {
    await pool.destroy()
  }
}

/**
 * svc on the embedded default with the bench connections and rules (its counters in memory);
 * `env` adds to its environment (the profiler passes `NODE_OPTIONS=--cpu-prof`).
 */
export const startEmbeddedSvc = async (upstreamOrigin: string, env: Record<string, string> = {}): Promise<ProxySvc> => {
  const { dir, ports } = await svcWorkspace()
  const { svc } = await startSvcReady(dir, ports, { SVC__outbound__allow_private_networks: "true", ...env })
  try {
    pin(svc.child.pid, "servers")
    const authorization = `Bearer ${await readToken(dir)}`
    const origin = `http://127.0.0.1:${ports.api}`
    const connections = await createBenchConnections(origin, authorization, upstreamOrigin)
    return {
      origin,
      authorization,
      connections,
      upstreamOrigin,
      pid: svc.child.pid,
      stop: async () => void (await svc.stop())
    }
  } catch (error) {
    await svc.stop()
    throw error
  }
}

/** How long a fresh svc process is run before its first row. */
const jitWarmUpMs = 3_000

/**
 * Runs `_proxy_raw` on the process's rule-free connection for {@link jitWarmUpMs}, so its request
 * path is compiled before any row measures it: each row's own warm-up is 1 s, and without this
 * the first row of a process paid the compilation (its 0-rule row came out slower than the
 * 1-rule row after it).
 */
const warmUp = async (svc: ProxySvc): Promise<void> => {
  const shape = rawRoute(svc, svc.connections[0])(proxyJsonRequest)
  await runLoad({
    url: `${svc.origin}${shape.path}`,
    connections: 16,
    durationMs: jitWarmUpMs,
    warmupMs: 0,
    method: "GET",
    headers: shape.headers
  })
}

/** A svc process (started by `start`) in front of the shared upstream, shared by its targets. */
const sharedSvcOn = (start: (upstreamOrigin: string, upstream: () => Promise<number>) => Promise<ProxySvc>) =>
  shared(
    async (): Promise<ProxySvc> => {
      const upstream = await sharedUpstream()
      try {
        const origin = upstream.value.origin
        const svc = await start(origin, () => upstreamCount(origin))
        await warmUp(svc).catch(async (error: unknown) => {
          await svc.stop()
          throw error
        })
        return {
          ...svc,
          stop: async () => {
            await svc.stop()
            await upstream.release()
          }
        }
      } catch (error) {
        await upstream.release()
        throw error
      }
    },
    (svc) => svc.stop()
  )

/** The `GET /json` the upstream at `origin` answered so far. */
export const upstreamCount = async (origin: string): Promise<number> => {
  const response = await fetch(`${origin}${upstreamPaths.count}`, { signal: AbortSignal.timeout(5_000) })
  const count = Number(await response.text())
  if (response.status !== 200 || !Number.isInteger(count)) throw new Error(`upstream count answered ${response.status}`)
  return count
}

/** The embedded default, shared by its `_proxy_raw` rows (0, 1, 10 rules) and its `_proxy` row. */
const sharedEmbedded = sharedSvcOn((upstreamOrigin) => startEmbeddedSvc(upstreamOrigin))
/**
 * The embedded default with telemetry on (issue 20): every trace sampled (ratio 1.0), traces,
 * metrics and logs exported over OTLP/gRPC to a local collector (`otlpSink.ts`, on the load
 * generator's CPU); after the row, the collector must have received exports.
 */
const sharedEmbeddedTelemetry = sharedSvcOn((upstreamOrigin) => startEmbeddedTelemetrySvc(upstreamOrigin))

/** The embedded default with telemetry on, exporting to its own local collector (stopped with it). */
export const startEmbeddedTelemetrySvc = async (
  upstreamOrigin: string,
  env: Record<string, string> = {}
): Promise<ProxySvc> => {
  const sink = await startNodeScript("./otlpSink.ts")
  // The collector is not part of svc: beside the load generator and the upstream, not on svc's CPU.
  pin(sink.pid, "generator")
  try {
    const grpcPort = await (await fetch(`http://127.0.0.1:${sink.port}/port`)).text()
    const svc = await startEmbeddedSvc(upstreamOrigin, {
      SVC__telemetry__enabled: "true",
      SVC__telemetry__exporter__protocol: "grpc",
      SVC__telemetry__exporter__endpoint: `127.0.0.1:${grpcPort}`,
      SVC__telemetry__exporter__insecure: "true",
      SVC__telemetry__sampling__ratio: "1",
      OTEL_BSP_SCHEDULE_DELAY: "1000",
      OTEL_METRIC_EXPORT_INTERVAL: "5000",
      ...env
    })
    return {
      ...svc,
      stop: async () => {
        await svc.stop()
        const counts = (await (await fetch(`http://127.0.0.1:${sink.port}/count`)).json()) as { exports: number }
        await sink.stop()
        if (counts.exports === 0) throw new Error("telemetry row: the collector received no export")
      }
    }
  } catch (error) {
    await sink.stop()
    throw error
  }
}
/** PostgreSQL + a private Redis, `svc serve --service api` alone, shared by its `_proxy_raw` rows. */
const sharedProduction = sharedSvcOn(async (upstreamOrigin, forwarded): Promise<ProxySvc> => {
  const svc = await startProductionSvc({ upstreamOrigin, forwarded, setup: createBenchConnections })
  return { ...svc, connections: svc.created, upstreamOrigin }
})

const svcTarget = (
  id: string,
  label: string,
  lease: () => Promise<Lease<ProxySvc>>,
  rules: RuleCount,
  routeOf: (svc: ProxySvc, connectionId: string) => (request: RequestShape) => RequestShape,
  check: Check
): Target => ({
  id,
  label,
  start: async (): Promise<RunningTarget> => {
    const held = await lease()
    const svc = held.value
    const running: RunningTarget = {
      origin: svc.origin,
      stop: held.release,
      route: routeOf(svc, svc.connections[rules]),
      ...(svc.store === undefined ? {} : { store: svc.store }),
      pid: svc.pid
    }
    try {
      await verify(label, running, check)
      const matched = await matchedRules(svc, svc.connections[rules])
      if (matched !== rules) throw new Error(`${label} check: ${matched} rule(s) matched the request, not ${rules}`)
    } catch (error) {
      await held.release()
      throw error
    }
    return running
  }
})

/** `_proxy_raw`: the same method, the upstream URL in `X-Svc-Upstream-URL`, the body as it is. */
export const rawRoute =
  (svc: ProxySvc, connectionId: string) =>
  (request: RequestShape): RequestShape => ({
    ...request,
    path: `/api/v1/connections/${connectionId}/_proxy_raw`,
    headers: {
      ...request.headers,
      authorization: svc.authorization,
      "x-svc-upstream-url": `${svc.upstreamOrigin}${request.path}`
    }
  })

/** `_proxy`: the request as a JSON envelope POSTed to the route (no request body in these rows). */
export const envelopeRoute =
  (svc: ProxySvc, connectionId: string) =>
  (request: RequestShape): RequestShape => {
    if (request.body !== undefined) throw new Error("the svc _proxy rows send no upstream request body")
    return {
      method: "POST",
      path: `/api/v1/connections/${connectionId}/_proxy`,
      headers: { authorization: svc.authorization, "content-type": "application/json" },
      body: JSON.stringify({
        url: `${svc.upstreamOrigin}${request.path}`,
        method: request.method,
        headers: { accept: "application/json", ...request.headers }
      })
    }
  }

const rulesLabel = (rules: RuleCount) => (rules === 0 ? "" : rules === 1 ? " 1 rule" : ` ${rules} rules`)

/** The svc `_proxy_raw` targets on one svc process: `<prefix>`, `<prefix>-r1`, `<prefix>-r10`. */
const rawTargets = (prefix: string, label: string, lease: () => Promise<Lease<ProxySvc>>): ReadonlyArray<Target> =>
  ruleCounts.map((rules) =>
    svcTarget(
      rules === 0 ? prefix : `${prefix}-r${rules}`,
      `${label}${rulesLabel(rules)}`,
      lease,
      rules,
      rawRoute,
      plainJson
    )
  )

/** The bare undici proxy (`bareProxy.ts`) in front of `upstreamOrigin`, pinned with the servers; `env` is added to its environment. */
export const startBareProxy = async (upstreamOrigin: string, env: Record<string, string> = {}) => {
  const proxy = await startNodeScript("./bareProxy.ts", {
    ...env,
    BENCH_UPSTREAM: upstreamOrigin,
    BENCH_API_KEY: apiKey
  })
  pin(proxy.pid, "servers")
  return proxy
}

export const proxyTargets: ReadonlyArray<Target> = [
  {
    id: "proxy-direct",
    label: "direct to upstream",
    start: async () => {
      // its own upstream, on the servers' CPUs: here the upstream is the server under test
      const upstream = await startUpstream("servers")
      const running: RunningTarget = {
        origin: upstream.origin,
        stop: upstream.stop,
        route: (request) => ({ ...request, headers: { ...request.headers, authorization: `Bearer ${apiKey}` } })
      }
      await verify("direct", running, plainJson).catch(async (error: unknown) => {
        await upstream.stop()
        throw error
      })
      return running
    }
  },
  proxyTarget("proxy-node", "bare undici proxy", (upstreamOrigin) => startBareProxy(upstreamOrigin)),
  {
    id: "proxy-nginx",
    label: "nginx proxy_pass",
    start: async (context) => {
      const binary = nginxBinary()
      if (binary === undefined) throw new TargetUnavailable("nginx not installed (Debian package nginx)")
      return proxyTarget("proxy-nginx", "nginx proxy_pass", async (upstreamOrigin) => {
        const nginx = await startNginx(binary, upstreamOrigin, apiKey)
        pin(nginx.pid, "servers")
        return nginx
      }).start(context)
    }
  },
  ...rawTargets("proxy-svc-raw", "svc _proxy_raw", sharedEmbedded),
  svcTarget("proxy-svc-raw-otel", "svc _proxy_raw telemetry on", sharedEmbeddedTelemetry, 0, rawRoute, plainJson),
  svcTarget("proxy-svc", "svc _proxy", sharedEmbedded, 0, envelopeRoute, envelope),
  ...rawTargets("proxy-pg-raw", "pg+redis _proxy_raw", sharedProduction)
]
