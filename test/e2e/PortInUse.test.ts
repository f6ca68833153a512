/**
 * A port another process holds: `svc serve` exits 1 with one line naming the key to change and its
 * environment variable, for a service listener, the Prometheus scrape listener and (on
 * PostgreSQL, with a private Redis) a worker's cluster runner socket.
 */
import * as fs from "node:fs/promises"
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import { type RedisServer, startRedisServer } from "../support/RedisServer.ts"
import { freePort, freePorts, portEnv, runSvc, tempDir } from "../support/SvcProcess.ts"
import { seedEmbedded } from "../support/EmbeddedTemplate.ts"

const occupy = (port: number) =>
  new Promise<net.Server>((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(port, "127.0.0.1", () => resolve(server))
  })

const svcLines = (output: string) => output.split("\n").filter((line) => line.startsWith("svc: "))

describe("a port in use", () => {
  let dir: string
  const held: Array<net.Server> = []

  beforeAll(async () => {
    dir = await tempDir("svc-e2e-inuse-")
    await seedEmbedded(dir)
  })

  afterAll(async () => {
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))))
    await fs.rm(dir, { recursive: true, force: true })
  })

  it("a service's port: exit 1 and one line naming api.port and SVC__api__port", async () => {
    const port = await freePort()
    held.push(await occupy(port))
    const result = await runSvc(["serve", "--service", "api"], {
      cwd: dir,
      env: { SVC__api__port: String(port) },
      timeoutMs: 90_000
    })
    expect(result.code, result.output).toBe(1)
    expect(svcLines(result.output)).toEqual([
      `svc: api.port: ${port} is in use (EADDRINUSE); set api.port or SVC__api__port`
    ])
  }, 120_000)

  it("the scrape listener's port: the line names telemetry.prometheus.port", async () => {
    const port = await freePort()
    held.push(await occupy(port))
    await fs.writeFile(`${dir}/svc.yaml`, `telemetry: { prometheus: { enabled: true, port: ${port} } }\n`)
    const api = await freePort()
    const result = await runSvc(["serve", "--service", "api"], {
      cwd: dir,
      env: { SVC__api__port: String(api) },
      timeoutMs: 90_000
    })
    expect(result.code, result.output).toBe(1)
    expect(svcLines(result.output)).toEqual([
      `svc: telemetry.prometheus.port: ${port} is in use (EADDRINUSE); set telemetry.prometheus.port or SVC__telemetry__prometheus__port`
    ])
  }, 120_000)

  describe("on PostgreSQL", () => {
    let workspace: ProductionWorkspace | undefined
    let redis: RedisServer | undefined

    beforeAll(async () => {
      workspace = await productionWorkspace("svc-e2e-inuse-pg-")
      redis = await startRedisServer()
      await workspace.writeConfig()
    }, 60_000)

    afterAll(async () => {
      await redis?.stop()
      await workspace?.close()
    })

    it("a worker's runner port: the line names cluster.runner.port", async () => {
      const ports = await freePorts()
      held.push(await occupy(ports.runner))
      const result = await runSvc(["serve", "--service", "worker", "--migrate"], {
        cwd: workspace?.dir ?? "",
        env: { ...portEnv(ports), SVC__counter_store__url: redis?.url ?? "" },
        timeoutMs: 90_000
      })
      expect(result.code, result.output).toBe(1)
      expect(svcLines(result.output)).toEqual([
        `svc: cluster.runner.port: ${ports.runner} is in use (EADDRINUSE); set cluster.runner.port or SVC__cluster__runner__port`
      ])
    }, 120_000)
  })
})
