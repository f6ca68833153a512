/**
 * Kubernetes probes, black-box: `GET /livez` and `GET /readyz` on every service's port, for the
 * embedded process (all four services) and production processes (PostgreSQL, a private Redis).
 * `/readyz` answers 503 with the standard error body (`not_ready`) during the shutdown delay
 * while `/livez` stays 200, on `public` and `admin-api` while the counter store is down (not on
 * `api`, whose rate limits fail open); the process exits 0. Probes stay out of the HTTP metrics.
 */
import * as fs from "node:fs/promises"
import * as https from "node:https"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/Api.ts"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import { type RedisServer, startRedisServer } from "../support/RedisServer.ts"
import {
  freePorts,
  type Ports,
  portEnv,
  type RunningSvc,
  runSvc,
  startSvc,
  tempDir,
  waitForHttp
} from "../support/SvcProcess.ts"
import { seedEmbedded } from "../support/EmbeddedTemplate.ts"

interface Answer {
  readonly status: number
  readonly body: unknown
}

const get = (url: string): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const request = https.get(url, { rejectUnauthorized: false, timeout: 5_000 }, (response) => {
      let text = ""
      response.on("data", (chunk: Buffer) => {
        text += chunk.toString("utf8")
      })
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) as unknown }))
    })
    request.on("error", reject)
  })

/** `GET path` on one service's port (admin-api over TLS). */
const probe = async (ports: Ports, service: keyof Ports, p: string): Promise<Answer> => {
  if (service === "adminApi") return get(`https://localhost:${ports.adminApi}${p}`)
  const response = await fetch(`http://127.0.0.1:${ports[service]}${p}`, { signal: AbortSignal.timeout(5_000) })
  return { status: response.status, body: (await response.json()) as unknown }
}

const services = ["api", "adminApi", "public", "worker"] as const
const ok = { status: 200, body: { status: "ok" } }

describe("probes of the embedded process", () => {
  let dir: string
  let ports: Ports
  let svc: RunningSvc

  beforeAll(async () => {
    dir = await tempDir("svc-e2e-probes-")
    await seedEmbedded(dir)
    ports = await freePorts()
    svc = startSvc(["serve"], {
      cwd: dir,
      env: { ...portEnv(ports), SVC__http__shutdown_delay: "3s", SVC__telemetry__prometheus__enabled: "true" }
    })
    await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, svc)
    await eventually(
      () => probe(ports, "worker", "/readyz"),
      (a) => a.status === 200
    )
  }, 90_000)

  afterAll(async () => {
    await svc?.stop("SIGKILL")
    await fs.rm(dir, { recursive: true, force: true })
  })

  it("answers /livez and /readyz 200 on every service's port", async () => {
    for (const service of services) {
      expect(await probe(ports, service, "/livez"), service).toEqual(ok)
      expect(await probe(ports, service, "/readyz"), service).toEqual(ok)
    }
  })

  it("leaves the probes out of the HTTP metrics, as /healthz", async () => {
    for (let i = 0; i < 3; i++) {
      await probe(ports, "api", "/livez")
      await probe(ports, "api", "/readyz")
    }
    await fetch(`http://127.0.0.1:${ports.api}/openapi.json`)
    const metrics = await (await fetch(`http://127.0.0.1:${ports.metrics}/metrics`)).text()
    // Every request so far was a probe or /ping, but the one /openapi.json: only it is counted.
    const counted = [...metrics.matchAll(/^http_server_request_duration_seconds_count\{[^}]*\} (\d+)$/gm)]
    expect(
      counted.reduce((n, m) => n + Number(m[1]), 0),
      metrics
    ).toBe(1)
  })

  it("publishes both probes in the Swagger document of the api", async () => {
    const swagger = (await (await fetch(`http://127.0.0.1:${ports.api}/swagger.json`)).json()) as {
      paths: Record<string, { get?: { responses: Record<string, unknown> } }>
    }
    for (const p of ["/livez", "/readyz"]) {
      expect(Object.keys(swagger.paths[p]?.get?.responses ?? {}).sort(), p).toEqual(["200", "503"])
    }
  })

  it("answers /readyz 503 during the shutdown delay while /livez stays 200, then exits 0", async () => {
    const offset = svc.output().length
    svc.child.kill("SIGTERM")
    const notReady = await eventually(
      () => probe(ports, "api", "/readyz"),
      (a) => a.status === 503,
      2_500
    )
    expect(notReady).toEqual({ status: 503, body: { error: "shutting down", code: "not_ready" } })
    for (const service of services) {
      expect(await probe(ports, service, "/readyz"), service).toEqual(notReady)
      expect(await probe(ports, service, "/livez"), service).toEqual(ok)
    }
    // Other requests are still served during the delay.
    expect((await fetch(`http://127.0.0.1:${ports.api}/ping`)).status).toBe(200)
    expect(await svc.exited).toBe(0)
    expect(svc.output().slice(offset)).toContain("http: not ready; serving 3000 ms more before draining")
  }, 30_000)
})

describe("probes of production processes while the counter store is down", () => {
  let workspace: ProductionWorkspace | undefined
  let redis: RedisServer | undefined
  let ports: Ports
  let worker: RunningSvc | undefined
  let front: RunningSvc | undefined

  beforeAll(async () => {
    redis = await startRedisServer()
    workspace = await productionWorkspace("svc-e2e-probes-prod-")
    await fs.writeFile(
      path.join(workspace.dir, "svc.yaml"),
      [
        ...workspace.baseConfig.filter((line) => !line.startsWith("counter_store:")),
        `counter_store: { provider: redis, url: "${redis.url}", key_prefix: "probes:" }`
      ].join("\n")
    )
    const migrated = await runSvc(["migrate"], { cwd: workspace.dir })
    expect(migrated.code, migrated.output).toBe(0)
    ports = await freePorts()
    worker = startSvc(["serve", "--service", "worker"], { cwd: workspace.dir, env: portEnv(ports) })
    front = startSvc(["serve", "--service", "api", "--service", "admin-api", "--service", "public"], {
      cwd: workspace.dir,
      env: portEnv(ports)
    })
    await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, front)
    await waitForHttp(`http://127.0.0.1:${ports.worker}/ping`, worker)
  }, 120_000)

  afterAll(async () => {
    await Promise.all([worker?.stop("SIGKILL"), front?.stop("SIGKILL")])
    await redis?.stop()
    await workspace?.close()
  })

  it("every service is live and ready with its stores up (the worker once its runner is registered)", async () => {
    const worker = await eventually(
      () => probe(ports, "worker", "/readyz"),
      (a) => a.status === 200
    )
    expect(worker).toEqual(ok)
    for (const service of services) {
      expect(await probe(ports, service, "/livez"), service).toEqual(ok)
      expect(await probe(ports, service, "/readyz"), service).toEqual(ok)
    }
  }, 60_000)

  it("public and admin-api are not ready without the counter store; api and the worker stay ready", async () => {
    await redis!.kill()
    const down = { status: 503, body: { error: "not reachable: counterStore", code: "not_ready" } }
    expect(
      await eventually(
        () => probe(ports, "public", "/readyz"),
        (a) => a.status === 503,
        15_000
      )
    ).toEqual(down)
    expect(await probe(ports, "adminApi", "/readyz")).toEqual(down)
    expect(await probe(ports, "api", "/readyz")).toEqual(ok)
    expect(await probe(ports, "worker", "/readyz")).toEqual(ok)
    // /healthz keeps its detailed body and reports the outage on every service.
    const health = await probe(ports, "api", "/healthz")
    expect(health.status).toBe(503)
    expect(health.body).toMatchObject({ status: "unavailable", checks: { counterStore: { status: "unavailable" } } })
    for (const service of services) expect(await probe(ports, service, "/livez"), service).toEqual(ok)
  }, 60_000)
})
