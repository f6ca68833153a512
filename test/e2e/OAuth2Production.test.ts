/**
 * Token refresh single flight across processes, black-box (issue 5): two `svc serve` processes
 * (api + public) on one fresh PostgreSQL database and one Redis, an authorization-code connection
 * set up through the first, and once its access token has expired 20 concurrent proxied requests
 * split over both processes: the real provider (oidc-provider) sees exactly one refresh, and every
 * request succeeds with the new token.
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { SignJWT } from "jose"
import { randomBytes, randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { postgres, TestDatabase } from "@svc/sql/TestDatabase"
import { caller, expectStatus, rand, resources } from "../support/Api.ts"
import { makeBrowser } from "../support/Browser.ts"
import { type OAuthProvider, startOAuthProvider } from "../support/OAuthProvider.ts"
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

const secret = randomBytes(48)
const clientSecret = `secret-${randomBytes(16).toString("hex")}`
const keyPrefix = `svc-e2e-oauth-${randomUUID()}:`
const appOrigin = "https://app.example.test"

let dir: string
let scope: Scope.Closeable
let provider: OAuthProvider
const processes: Array<{ ports: Ports; running: RunningSvc }> = []

const signHs256 = (sub: string) =>
  new SignJWT({})
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime("1h")
    .setJti(randomUUID())
    .sign(secret)

const logs = () => processes.map((p, i) => `process ${i}:\n${p.running.output().slice(-3000)}`).join("\n")

const config = (url: string) =>
  [
    `database: { provider: postgres, url: "${url}", max_connections: 4 }`,
    `counter_store: { provider: redis, url: "redis://127.0.0.1:6379", key_prefix: "${keyPrefix}" }`,
    "encryption: { root_key: { path: root.key } }",
    "system_auth:",
    "  jwt_signing_key: { private_key: { path: hs256.secret } }",
    "  actors:",
    "    - external_id: ops",
    "      permissions: [{ namespace: 'root.**', resources: ['*'], verbs: ['*'] }]",
    "outbound: { allow_private_networks: true }",
    `host_application: { allowed_origins: ["${appOrigin}"] }`,
    `oauth2: { clients: [{ client_id: svc-web, client_secret: { value: "${clientSecret}" } }] }`
  ].join("\n")

beforeAll(async () => {
  dir = await tempDir("svc-e2e-oauth-prod-")
  scope = await Effect.runPromise(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(postgres, scope))
  const url = Context.get(context, TestDatabase).url ?? ""
  await fs.writeFile(path.join(dir, "hs256.secret"), secret, { mode: 0o600 })
  await fs.writeFile(path.join(dir, "root.key"), randomBytes(32).toString("base64"), { mode: 0o600 })
  await fs.writeFile(path.join(dir, "svc.yaml"), config(url))
  const first = await freePorts()
  const migrated = await runSvc(["migrate", "--config", "svc.yaml"], { cwd: dir, env: portEnv(first) })
  expect(migrated.code, migrated.output).toBe(0)
  for (const ports of [first, await freePorts()]) {
    const running = startSvc(["serve", "--config", "svc.yaml", "--service", "api", "--service", "public"], {
      cwd: dir,
      env: portEnv(ports)
    })
    processes.push({ ports, running })
    await waitForHttp(`http://127.0.0.1:${ports.api}/ping`, running, 60_000)
  }
  provider = await startOAuthProvider({ accessTokenTtl: 3600 })
  await provider.addClient({
    client_id: "svc-web",
    client_secret: clientSecret,
    token_endpoint_auth_method: "client_secret_basic",
    redirect_uris: [`http://127.0.0.1:${first.public}/oauth2/callback`],
    grant_types: ["authorization_code", "refresh_token"],
    scope: "openid offline_access read"
  })
}, 120_000)

afterAll(async () => {
  for (const p of processes) await p.running.stop()
  await provider?.close()
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  if (dir !== undefined) await fs.rm(dir, { recursive: true, force: true })
}, 60_000)

describe("token refresh across processes (issue 5)", () => {
  it("refreshes an expired token exactly once under 20 concurrent requests from two processes", async () => {
    const token = await signHs256("ops")
    const [a, b] = processes.map((p) => ({ ports: p.ports, call: caller(p.ports, token) }))
    if (a === undefined || b === undefined) throw new Error("two processes expected")
    const svcA = {
      ports: a.ports,
      adminToken: token,
      output: logs,
      call: a.call,
      sign: signHs256,
      stop: async () => {}
    }
    const r = resources(svcA)
    const ns = (await r.namespace(`root.oauthprod${rand()}`)).path
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: "provider",
        auth: {
          type: "oauth2",
          grant_type: "authorization_code",
          authorization_endpoint: provider.endpoints.authorization,
          token_endpoint: provider.endpoints.token,
          client_id: "svc-web",
          scopes: [{ name: "read", required: true }],
          refresh: { before_expiry: "1s" }
        },
        proxy: { allowed_hosts: [new URL(provider.issuer).host], allow_private_networks: true }
      }
    })
    // Short-lived access tokens from now on: the first one expires a few seconds after setup.
    provider.setAccessTokenTtl(4)
    const started = expectStatus<{ connection: { id: string }; next: { url: string } }>(
      await a.call("POST", "/api/v1/connections/_initiate", {
        body: { connectorId: connector.id, returnToUrl: `${appOrigin}/done` }
      }),
      201
    )
    const journey = await makeBrowser().authorizeAtProvider(started.next.url, {
      stopAt: (url) => url.startsWith(appOrigin)
    })
    expect(new URL(journey.stoppedAt ?? "").searchParams.get("status"), logs()).toBe("configured")
    provider.setAccessTokenTtl(3600)
    const id = started.connection.id
    const refreshesBefore = provider.tokenCount("refresh_token", "success")
    await new Promise((resolve) => setTimeout(resolve, 4500))

    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 === 0 ? a : b).call<{ statusCode: number }>("POST", `/api/v1/connections/${id}/_proxy`, {
          body: { method: "GET", url: provider.endpoints.resource("me") }
        })
      )
    )
    for (const answer of answers) expect(expectStatus<{ statusCode: number }>(answer, 200).statusCode).toBe(200)
    expect(provider.tokenCount("refresh_token", "success") - refreshesBefore, logs()).toBe(1)
    expect(provider.tokenCount("refresh_token", "failure")).toBe(0)
    expect(provider.resourceRequests().filter((request) => request.status === 401)).toEqual([])
  }, 90_000)
})
