/**
 * The README's first command, black-box: `svc serve` with no configuration in an empty directory
 * must answer on all four services, serve admin-api over TLS, refuse anonymous API calls with the
 * standard error body, accept the admin token it wrote, publish Swagger 2.0, and stop on SIGTERM.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as fs from "node:fs/promises"
import * as https from "node:https"
import * as path from "node:path"
import {
  freePorts,
  type Ports,
  portEnv,
  type RunningSvc,
  startSvc,
  tempDir,
  waitForHttp
} from "../support/SvcProcess.ts"

const httpsGet = (url: string) =>
  new Promise<{ status: number; body: string; subject: string }>((resolve, reject) => {
    const request = https.get(url, { rejectUnauthorized: false }, (response) => {
      const socket = response.socket as import("node:tls").TLSSocket
      const cn = socket.getPeerCertificate().subject?.CN ?? ""
      const subject = Array.isArray(cn) ? cn.join(",") : cn
      let body = ""
      response.on("data", (chunk: Buffer) => {
        body += chunk.toString("utf8")
      })
      response.on("end", () => resolve({ status: response.statusCode ?? 0, body, subject }))
    })
    request.on("error", reject)
  })

describe("embedded default", () => {
  let dir: string
  let ports: Ports
  let svc: RunningSvc
  const api = (p: string) => `http://127.0.0.1:${ports.api}${p}`

  beforeAll(async () => {
    dir = await tempDir("svc-e2e-embedded-")
    ports = await freePorts()
    svc = startSvc(["serve"], { cwd: dir, env: portEnv(ports) })
    await waitForHttp(api("/ping"), svc)
  }, 90_000)

  afterAll(async () => {
    await svc?.stop()
    await fs.rm(dir, { recursive: true, force: true })
  })

  it("prints the banner the README and docs/configuration.md show (with this run's ports)", async () => {
    // The banner follows the listeners by a moment: wait for its last line.
    const deadline = Date.now() + 15_000
    while (!svc.output().includes("sign-jwt --admin --privateKeyPath") && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100))
    }
    const lines = svc.output().split("\n")
    const start = lines.findIndex((l) => / ready \(embedded default; /.test(l))
    const end = lines.findIndex((l, i) => i > start && l.includes("sign-jwt --admin --privateKeyPath"))
    expect(start, svc.output()).toBeGreaterThanOrEqual(0)
    const printed = lines.slice(start, end + 1).join("\n")
    const repo = path.join(import.meta.dirname, "../..")
    for (const doc of ["README.md", "docs/configuration.md"]) {
      const text = await fs.readFile(path.join(repo, doc), "utf8")
      const sample = /```\n(svc \S+ ready \(embedded default;[\s\S]*?)\n```/.exec(text)?.[1]
      expect(sample, `${doc} has no banner sample`).toBeDefined()
      const withPorts = (sample ?? "")
        .replaceAll(":8081", `:${ports.api}`)
        .replaceAll(":8082", `:${ports.adminApi}`)
        .replaceAll(":8080", `:${ports.public}`)
        .replaceAll(":8083", `:${ports.worker}`)
      expect(printed.replace(/^svc \S+ ready/, "svc <version> ready"), doc).toBe(
        withPorts.replace(/^svc \S+ ready/, "svc <version> ready")
      )
    }
  })

  it("answers /ping and /healthz on every service", async () => {
    for (const port of [ports.api, ports.public, ports.worker]) {
      const ping = await fetch(`http://127.0.0.1:${port}/ping`)
      expect(ping.status).toBe(200)
      expect(await ping.text()).toBe("pong")
      const health = await fetch(`http://127.0.0.1:${port}/healthz`)
      expect(health.status).toBe(200)
      const body = (await health.json()) as { status: string; checks: Record<string, { status: string }> }
      expect(body.status).toBe("ok")
      expect(body.checks.database?.status).toBe("ok")
      expect(body.checks.counterStore?.status).toBe("ok")
    }
  })

  it("serves admin-api over TLS with the generated localhost certificate", async () => {
    const ping = await httpsGet(`https://localhost:${ports.adminApi}/ping`)
    expect(ping).toEqual({ status: 200, body: "pong", subject: "localhost" })
    const stat = await fs.stat(path.join(dir, ".svc/tls/admin-api.key"))
    expect(stat.mode & 0o077).toBe(0)
  })

  it("refuses anonymous API calls with 401 and the standard error body", async () => {
    for (const p of ["/api/v1/connectors", "/api/v1/auth/whoami"]) {
      const response = await fetch(api(p))
      expect(response.status).toBe(401)
      expect(await response.json()).toEqual({ error: "a bearer token is required", code: "unauthorized" })
    }
    const forged = await fetch(api("/api/v1/auth/whoami"), { headers: { authorization: "Bearer not.a.jwt" } })
    expect(forged.status).toBe(401)
    expect(((await forged.json()) as { code: string }).code).toBe("invalid_token")
  })

  it("accepts the admin token it wrote to the data directory", async () => {
    const token = (await fs.readFile(path.join(dir, ".svc/admin.token"), "utf8")).trim()
    expect((await fs.stat(path.join(dir, ".svc/admin.token"))).mode & 0o077).toBe(0)
    const response = await fetch(api("/api/v1/auth/whoami"), { headers: { authorization: `Bearer ${token}` } })
    expect(response.status).toBe(200)
    const body = (await response.json()) as { actor: { externalId: string; id: string }; token: { service: string } }
    expect(body.actor.externalId).toBe("admin")
    expect(body.actor.id).toMatch(/^act_/)
    expect(body.token.service).toBe("api")
    const unknown = await fetch(api("/api/v1/no-such-route"), { headers: { authorization: `Bearer ${token}` } })
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toEqual({ error: "not found", code: "not_found" })
    expect(svc.output()).not.toContain(token)
  })

  it("publishes Swagger 2.0 and OpenAPI 3.1 on both APIs", async () => {
    const apiSwagger = (await (await fetch(api("/swagger.json"))).json()) as { swagger: string }
    expect(apiSwagger.swagger).toBe("2.0")
    const adminSwagger = JSON.parse((await httpsGet(`https://localhost:${ports.adminApi}/swagger.json`)).body) as {
      swagger: string
    }
    expect(adminSwagger.swagger).toBe("2.0")
    const openapi = (await (await fetch(api("/openapi.json"))).json()) as { openapi: string }
    expect(openapi.openapi).toMatch(/^3\.1/)
  })

  it("prints the URLs and how to get a token", () => {
    expect(svc.output()).toContain(`http://127.0.0.1:${ports.api}`)
    expect(svc.output()).toContain(`https://127.0.0.1:${ports.adminApi}`)
    expect(svc.output()).toContain(".svc/admin.token")
  })

  it("restarts on the same data directory with the same actor and certificate, and stops on SIGTERM", async () => {
    const token = (await fs.readFile(path.join(dir, ".svc/admin.token"), "utf8")).trim()
    const before = (await (
      await fetch(api("/api/v1/auth/whoami"), { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { actor: { id: string } }
    const cert = await fs.readFile(path.join(dir, ".svc/tls/admin-api.crt"), "utf8")
    expect(await svc.stop("SIGTERM")).toBe(0)
    svc = startSvc(["serve"], { cwd: dir, env: portEnv(ports) })
    await waitForHttp(api("/ping"), svc)
    const after = (await (
      await fetch(api("/api/v1/auth/whoami"), { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { actor: { id: string } }
    expect(after.actor.id).toBe(before.actor.id)
    expect(await fs.readFile(path.join(dir, ".svc/tls/admin-api.crt"), "utf8")).toBe(cert)
  }, 90_000)
})
