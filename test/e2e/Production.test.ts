/**
 * The production shape, black-box: PostgreSQL and Redis from a config file, an HS256 shared
 * secret, `svc migrate` before `svc serve`, a subset of services, and the JWT rules of spec 5
 * enforced over real HTTP (audience, single-use nonce through Redis, unknown actor, algorithm).
 */
import { SignJWT } from "jose"
import { randomBytes, randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import { freePorts, type Ports, portEnv, runSvc, startSvc, waitForHttp } from "../support/SvcProcess.ts"

let workspace: ProductionWorkspace

const sign = (claims: Record<string, unknown>, key: Uint8Array = workspace.secret, alg = "HS256") =>
  new SignJWT(claims).setProtectedHeader({ alg, typ: "JWT" }).setIssuedAt().setJti(randomUUID()).sign(key)

describe("production configuration (PostgreSQL, Redis, HS256)", () => {
  let dir: string
  let ports: Ports
  let env: Record<string, string>
  const api = (p: string) => `http://127.0.0.1:${ports.api}${p}`
  const whoami = (token: string) => fetch(api("/api/v1/auth/whoami"), { headers: { authorization: `Bearer ${token}` } })

  beforeAll(async () => {
    workspace = await productionWorkspace("svc-e2e-production-")
    dir = workspace.dir
    ports = await freePorts()
    await workspace.writeConfig([
      "    - external_id: viewer",
      "      namespace: root.acme",
      "      permissions: [{ namespace: 'root.acme.**', resources: [connectors], verbs: [list] }]"
    ])
    env = portEnv(ports)
  }, 60_000)

  afterAll(async () => {
    await workspace?.close()
  })

  it("refuses to serve on a schema that is behind, then migrates once", async () => {
    const early = await runSvc(["serve"], { cwd: dir, env })
    expect(early.code).toBe(1)
    expect(early.output).toContain("run `svc migrate`")
    const first = await runSvc(["migrate"], { cwd: dir, env })
    expect(first.code).toBe(0)
    expect(first.output).toContain("main: applied 0001_initial")
    expect(first.output).toContain("appMetrics: applied 0001_request_events")
    const second = await runSvc(["migrate"], { cwd: dir, env })
    expect(second).toEqual({ code: 0, output: "migrations: already up to date\n" })
  }, 60_000)

  it("serves only the selected services and enforces the token rules", async () => {
    const svc = startSvc(["serve", "--service", "api", "--service", "worker"], { cwd: dir, env })
    try {
      await waitForHttp(api("/ping"), svc)
      const health = (await (await fetch(api("/healthz"))).json()) as { checks: Record<string, { status: string }> }
      expect(health.checks).toEqual({ database: { status: "ok" }, counterStore: { status: "ok" } })
      expect((await fetch(`http://127.0.0.1:${ports.worker}/healthz`)).status).toBe(200)
      await expect(fetch(`http://127.0.0.1:${ports.public}/ping`)).rejects.toThrow()

      const ok = await whoami(await sign({ sub: "ops" }))
      expect(ok.status).toBe(200)
      expect(((await ok.json()) as { actor: { externalId: string } }).actor.externalId).toBe("ops")

      const restricted = await whoami(
        await sign({
          sub: "viewer",
          permissions: [{ namespace: "root.acme.team", resources: ["connectors"], verbs: ["list"] }]
        })
      )
      expect(restricted.status).toBe(200)
      const body = (await restricted.json()) as { actor: { namespace: string }; token: { restrictions: unknown } }
      expect(body.actor.namespace).toBe("root.acme")
      expect(body.token.restrictions).toEqual([
        { namespace: "root.acme.team", resources: ["connectors"], verbs: ["list"] }
      ])

      const rejected = async (token: string) => {
        const response = await whoami(token)
        return { status: response.status, body: (await response.json()) as { code: string; error: string } }
      }
      expect((await rejected(await sign({ sub: "ops", aud: ["admin-api"] }))).status).toBe(401)
      expect((await rejected(await sign({ sub: "nobody" }))).body.code).toBe("unknown_actor")
      expect((await rejected(await sign({ sub: "ops", exp: Math.floor(Date.now() / 1000) - 3600 }))).body.code).toBe(
        "token_expired"
      )
      expect((await rejected(await sign({ sub: "ops" }, randomBytes(48)))).body.code).toBe("invalid_token")

      const nonce = await sign({ sub: "ops", nonce: randomUUID(), exp: Math.floor(Date.now() / 1000) + 300 })
      expect((await whoami(nonce)).status).toBe(200)
      const replay = await rejected(nonce)
      expect(replay.status).toBe(401)
      expect(replay.body.error).toContain("nonce")
    } finally {
      expect(await svc.stop()).toBe(0)
    }
  }, 90_000)

  it("exits 2 naming the key when the configuration is invalid", async () => {
    await fs.writeFile(path.join(dir, "bad.yaml"), "database: { provider: postgres }\napi: { port: high }\n")
    const result = await runSvc(["serve", "--config", "bad.yaml"], { cwd: dir, env: {} })
    expect(result.code).toBe(2)
    expect(result.output).toContain("api.port: expected an integer between 0 and 65535, got a string")
    await fs.writeFile(path.join(dir, "bad.yaml"), "database: { provider: postgres }\n")
    const crossKey = await runSvc(["migrate", "--config", "bad.yaml"], { cwd: dir, env: {} })
    expect(crossKey.code).toBe(2)
    expect(crossKey.output).toContain("database: provider postgres needs `url`, or `addresses` and `database`")
  }, 30_000)
})
