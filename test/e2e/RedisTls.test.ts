/**
 * TLS to Redis, black-box (API-CONVENTIONS "Production infrastructure"): a private TLS-only
 * `redis-server` (`--port 0 --tls-port`, client certificates required) with certificates this
 * suite makes with `openssl` — a private CA, a server certificate for 127.0.0.1 by
 * `subjectAltName IP:127.0.0.1`, a client certificate. `svc serve --service api --service worker`
 * on PostgreSQL with `counter_store: {url: rediss://…, tls: {ca, cert, key}}` starts, proxies and
 * enforces a rate limit whose state is in that Redis; the same configuration with a CA that did
 * not sign the server's certificate fails the start: exit code 1 and one line naming the counter
 * store and the TLS verification problem, no stack trace.
 */
import { randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import {
  makeRedisTlsFiles,
  type RedisTlsFiles,
  startTlsRedisServer,
  type TlsRedisServer
} from "@svc/server/stores/testing/RedisTls"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { caller, eventually, expectStatus, type RateLimitBody, rand, resources } from "../support/Api.ts"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import { freePorts, portEnv, type RunningSvc, runSvc, startSvc, waitForHttp } from "../support/SvcProcess.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

const keyPrefix = `svc-e2e-rtls-${randomUUID()}:`

let files: RedisTlsFiles | undefined
let redis: TlsRedisServer | undefined
let upstream: Upstream | undefined
let workspace: ProductionWorkspace | undefined
let svc: RunningSvc | undefined

/** The configuration: the shared lines with the counter store on the TLS Redis, verified by `ca`. */
const writeConfig = (name: string, ca: string) =>
  fs.writeFile(
    path.join(workspace!.dir, name),
    [
      ...workspace!.baseConfig.filter((line) => !line.startsWith("counter_store:")),
      "counter_store:",
      "  provider: redis",
      `  url: "${redis!.url}"`,
      `  key_prefix: "${keyPrefix}"`,
      `  tls: { ca: "${ca}", cert: "${files!.clientCert}", key: "${files!.clientKey}" }`,
      "outbound: { allow_private_networks: true }"
    ].join("\n")
  )

beforeAll(async () => {
  files = await makeRedisTlsFiles()
  redis = await startTlsRedisServer(files, { authClients: "yes" })
  upstream = await startUpstream()
  upstream.route("/tls", () => ({ status: 200, headers: { "content-type": "application/json" }, body: '{"ok":true}' }))
  workspace = await productionWorkspace("svc-e2e-rtls-")
  await writeConfig("svc.yaml", files.ca)
  await writeConfig("wrong-ca.yaml", files.otherCa)
  const migrated = await runSvc(["migrate"], { cwd: workspace.dir })
  expect(migrated.code, migrated.output).toBe(0)
}, 120_000)

afterAll(async () => {
  await svc?.stop("SIGKILL")
  await redis?.stop()
  await upstream?.close()
  await workspace?.close()
  if (files !== undefined) await fs.rm(files.dir, { recursive: true, force: true })
}, 60_000)

describe("TLS to Redis (rediss:// with counter_store.tls)", () => {
  it("svc starts on the TLS Redis, proxies, and a rate limit of 3 admits exactly 3 of 8", async () => {
    const ports = await freePorts()
    svc = startSvc(["serve", "--service", "api", "--service", "worker"], { cwd: workspace!.dir, env: portEnv(ports) })
    await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, svc, 60_000)
    const health = await eventually(
      () =>
        fetch(`http://127.0.0.1:${ports.api}/healthz`).then(
          (r) => r.json() as Promise<{ checks: Record<string, unknown> }>
        ),
      (body) => JSON.stringify(body.checks.counterStore) === '{"status":"ok"}',
      30_000
    )
    expect(health.checks.counterStore, svc.output()).toEqual({ status: "ok" })

    const token = await workspace!.opsToken()
    const call = caller(ports, token)
    const r = resources({
      ports,
      adminToken: token,
      output: svc.output,
      call,
      sign: async () => token,
      stop: async () => {
        await svc?.stop()
      }
    })
    const ns = (await r.namespace(`root.rtls${rand()}`)).path
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: "demo",
        auth: { type: "api_key", placement: "bearer" },
        proxy: { allowed_hosts: [`127.0.0.1:${upstream!.port}`], allow_private_networks: true }
      }
    })
    const connection = await r.connection(connector.id, { credentials: { api_key: "key-tls" } })
    const ruleId = expectStatus<RateLimitBody>(
      await call("POST", "/api/v1/rate-limits", {
        body: {
          namespace: ns,
          definition: {
            selector: {},
            bucket: { dimensions: ["connection"] },
            algorithm: { token_bucket: { capacity: 3, refill_rate: 0.0001 } }
          }
        }
      }),
      201
    ).id
    const statuses: Array<number> = []
    for (let i = 0; i < 8; i++) {
      const response = await fetch(`http://127.0.0.1:${ports.api}/api/v1/connections/${connection.id}/_proxy_raw`, {
        headers: { authorization: `Bearer ${token}`, "x-svc-upstream-url": `${upstream!.origin}/tls/${i}` },
        signal: AbortSignal.timeout(10_000)
      })
      await response.text()
      statuses.push(response.status)
      if (response.status === 429) expect(response.headers.get("x-svc-ratelimit")).toBe(ruleId)
    }
    expect(statuses, svc.output().slice(-4000)).toEqual([200, 200, 200, 429, 429, 429, 429, 429])
    // the bucket lives in the TLS Redis, under the key prefix
    const keys = await redis!.command("--scan", "--pattern", `${keyPrefix}rate-limit:{rl}:${ruleId}:*`)
    expect(keys.split("\n").filter((key) => key !== "")).toHaveLength(1)
    expect(await svc.stop("SIGTERM")).toBe(0)
  }, 120_000)

  it("a CA that did not sign the server's certificate fails the start with one line, no stack trace", async () => {
    const ports = await freePorts()
    const started = Date.now()
    const result = await runSvc(["serve", "--config", "wrong-ca.yaml", "--service", "api"], {
      cwd: workspace!.dir,
      env: portEnv(ports),
      timeoutMs: 30_000
    })
    console.log(`wrong CA: exit ${result.code} after ${Date.now() - started} ms:\n${result.output}`)
    expect(result.code, result.output).toBe(1)
    const lines = result.output.split("\n").filter((line) => line.includes("counter store"))
    const failure = lines.filter((line) => line.startsWith("svc: "))
    expect(failure, result.output).toHaveLength(1)
    expect(failure[0]).toMatch(/^svc: the counter store is unavailable \(connect: TLS verification failed: .+\)$/)
    expect(result.output).not.toMatch(/^\s+at /m)
    expect(result.output).not.toContain("PRIVATE KEY")
  }, 60_000)
})
