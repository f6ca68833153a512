/**
 * The proxy data plane targets (issue 6 item 7): the upstream hit directly, a bare undici proxy
 * (the framework floor), nginx `proxy_pass` (when installed), and svc's `_proxy_raw` and `_proxy`
 * on the embedded default with a connector whose api-key credential is injected as a bearer. The
 * proxies share one upstream (pinned beside the load generator); each server under test is pinned
 * to the servers' CPUs. Every target checks one request end to end before it is measured.
 */
import { randomBytes } from "node:crypto"
import { isDeepStrictEqual } from "node:util"
import { Pool } from "undici"
import { type CpuRole, pin } from "./Cpu.ts"
import { poster } from "./ListLatency.ts"
import { nginxBinary, startNginx } from "./Nginx.ts"
import { upstreamJson, upstreamPaths } from "./ProxyShapes.ts"
import { readToken, startNodeScript, startSvcReady, svcWorkspace } from "./Ready.ts"
import { type RequestShape, type RunningTarget, type Target, TargetUnavailable } from "./Target.ts"

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

const startUpstream = async (role: CpuRole): Promise<Upstream> => {
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

interface ProxySvc {
  readonly origin: string
  readonly token: string
  readonly connectionId: string
  readonly upstreamOrigin: string
  readonly stop: () => Promise<void>
}

const benchNamespace = "root.proxybench"

/** A published api-key (bearer) connector allowed to reach the upstream, and one connection. */
const createConnection = async (origin: string, token: string, upstreamOrigin: string): Promise<string> => {
  const pool = new Pool(origin, { connections: 1 })
  const post = poster(pool, { authorization: `Bearer ${token}`, "content-type": "application/json" })
  try {
    await post("POST", "/api/v1/namespaces", { path: benchNamespace }, 201)
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
    const body = { connectorId: connector.id, credentials: { api_key: apiKey } }
    const connection = (await post("POST", "/api/v1/connections", body, 201)) as { readonly id: string }
    return connection.id
  } finally {
    await pool.destroy()
  }
}

/** svc on the embedded default with the connection, shared by the `_proxy_raw` and `_proxy` rows. */
const sharedSvc = shared(
  async (): Promise<ProxySvc> => {
    const upstream = await sharedUpstream()
    try {
      const { dir, ports } = await svcWorkspace()
      const { svc } = await startSvcReady(dir, ports, { SVC__outbound__allow_private_networks: "true" })
      try {
        pin(svc.child.pid, "servers")
        const token = await readToken(dir)
        const origin = `http://127.0.0.1:${ports.api}`
        const connectionId = await createConnection(origin, token, upstream.value.origin)
        const stop = async () => {
          await svc.stop()
          await upstream.release()
        }
        return { origin, token, connectionId, upstreamOrigin: upstream.value.origin, stop }
      } catch (error) {
        await svc.stop()
        throw error
      }
    } catch (error) {
      await upstream.release()
      throw error
    }
  },
  (svc) => svc.stop()
)

const svcTarget = (
  id: string,
  label: string,
  routeOf: (svc: ProxySvc) => (request: RequestShape) => RequestShape,
  check: Check
) => ({
  id,
  label,
  start: async (): Promise<RunningTarget> => {
    const lease = await sharedSvc()
    const running: RunningTarget = { origin: lease.value.origin, stop: lease.release, route: routeOf(lease.value) }
    await verify(label, running, check).catch(async (error: unknown) => {
      await lease.release()
      throw error
    })
    return running
  }
})

/** `_proxy_raw`: the same method, the upstream URL in `X-Svc-Upstream-URL`, the body as it is. */
const rawRoute =
  (svc: ProxySvc) =>
  (request: RequestShape): RequestShape => ({
    ...request,
    path: `/api/v1/connections/${svc.connectionId}/_proxy_raw`,
    headers: {
      ...request.headers,
      authorization: `Bearer ${svc.token}`,
      "x-svc-upstream-url": `${svc.upstreamOrigin}${request.path}`
    }
  })

/** `_proxy`: the request as a JSON envelope POSTed to the route (no request body in these rows). */
const envelopeRoute =
  (svc: ProxySvc) =>
  (request: RequestShape): RequestShape => {
    if (request.body !== undefined) throw new Error("the svc _proxy rows send no upstream request body")
    return {
      method: "POST",
      path: `/api/v1/connections/${svc.connectionId}/_proxy`,
      headers: { authorization: `Bearer ${svc.token}`, "content-type": "application/json" },
      body: JSON.stringify({
        url: `${svc.upstreamOrigin}${request.path}`,
        method: request.method,
        headers: { accept: "application/json", ...request.headers }
      })
    }
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
  proxyTarget("proxy-node", "bare undici proxy", async (upstreamOrigin) => {
    const proxy = await startNodeScript("./bareProxy.ts", { BENCH_UPSTREAM: upstreamOrigin, BENCH_API_KEY: apiKey })
    pin(proxy.pid, "servers")
    return proxy
  }),
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
  svcTarget("proxy-svc-raw", "svc _proxy_raw", (svc) => rawRoute(svc), plainJson),
  svcTarget("proxy-svc", "svc _proxy", (svc) => envelopeRoute(svc), envelope)
]
