/**
 * Server-side connections with real secrets, black-box (issue 4): each auth method's credentials
 * land where the definition says at a local upstream (through the probe route), secrets never
 * appear in responses, logs or the database files, API-key rotation keeps the id, a required
 * configure field leaves `setupStepId`, OAuth2 client credentials fetch a token, and periodic
 * probes flip `healthState` after the failure threshold and back after recovery. A webhook
 * endpoint of the namespace receives the connection events of all of it (issue 34): the probe's
 * flips arrive as `connection.health_changed`, and no planted secret appears in any webhook body or
 * in the delivery log.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConnectionBody,
  eventually,
  expectError,
  expectStatus,
  launch,
  type PageBody,
  resources,
  type Svc
} from "../support/Api.ts"
import { type SeenRequest, startUpstream, type Upstream } from "../support/Upstream.ts"
import { startWebhookReceiver, type WebhookReceiver } from "../support/WebhookReceiver.ts"

interface ProbeBody {
  readonly probeId: string
  readonly connectionId: string
  readonly outcome: "success" | "failure"
  readonly statusCode?: number
  readonly durationMs: number
  readonly error?: string
  readonly checkedAt: string
}

const planted = () => `PLANTED${randomBytes(12).toString("hex")}`
const secrets: Array<string> = []
const plant = () => {
  const value = planted()
  secrets.push(value)
  return value
}

let svc: Svc
let upstream: Upstream
let receiver: WebhookReceiver
let webhookId: string
let r: ReturnType<typeof resources>
let ns: string

const connectorFor = async (auth: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
  const created = await r.publishedConnector(ns, {
    definition: {
      type: "demo",
      auth,
      proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true },
      probes: [{ id: "ping", url: `${upstream.origin}/probe/{{cfg.tenant}}` }],
      setup_flow: {
        preconnect: {
          steps: [
            {
              id: "tenant",
              json_schema: {
                type: "object",
                properties: {
                  tenant: { type: "string" },
                  webhook_secret: { type: "string", writeOnly: true },
                  region: { type: "string", default: "eu" }
                },
                required: ["tenant"]
              }
            }
          ]
        }
      },
      ...extra
    }
  })
  return created.id
}

const probe = async (connectorId: string, connectionId: string) => {
  const before = upstream.seen().length
  const result = expectStatus<ProbeBody>(
    await svc.call("GET", `/api/v1/connectors/${connectorId}/probes/ping?connectionId=${connectionId}`),
    200
  )
  const seen = upstream.seen().slice(before)
  expect(seen.length).toBe(1)
  return { result, request: seen[0] as SeenRequest }
}

const filesUnder = async (dir: string): Promise<Array<string>> => {
  const entries = await fs.readdir(dir, { withFileTypes: true, recursive: true })
  return entries.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name))
}

beforeAll(async () => {
  upstream = await startUpstream()
  upstream.route("/probe/", () => ({ status: 200, body: "ok" }))
  receiver = await startWebhookReceiver()
  svc = await launch("svc-credentials-", {
    env: { SVC__outbound__allow_private_networks: "true", SVC__webhooks__poll_interval: "100ms" }
  })
  r = resources(svc)
  ns = await r.freshNamespace("cred")
  const hook = expectStatus<{ id: string; secret: string }>(
    await svc.call("POST", "/api/v1/webhooks", { body: { namespace: ns, url: receiver.url("/events") } }),
    201
  )
  webhookId = hook.id
  receiver.secret("/events", hook.secret)
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  await upstream?.close()
  await receiver?.close()
})

describe("credentials land where the definition says", () => {
  it("api_key bearer → Authorization: Bearer", async () => {
    const key = plant()
    const connectorId = await connectorFor({ type: "api_key", placement: "bearer" })
    const connection = await r.connection(connectorId, {
      configuration: { tenant: "acme", webhook_secret: plant() },
      credentials: { api_key: key }
    })
    expect(connection.state).toBe("configured")
    expect(connection.setupStepId).toBeNull()
    expect(connection.configuration).toEqual({ tenant: "acme", webhook_secret: "[redacted]", region: "eu" })
    const { result, request } = await probe(connectorId, connection.id)
    expect(result).toMatchObject({ probeId: "ping", connectionId: connection.id, outcome: "success", statusCode: 200 })
    expect(request.path).toBe("/probe/acme")
    expect(request.headers.authorization).toBe(`Bearer ${key}`)
  })

  it("api_key header with prefix → the named header only", async () => {
    const key = plant()
    const connectorId = await connectorFor({
      type: "api_key",
      placement: "header",
      header_name: "X-Api-Key",
      prefix: "Token "
    })
    const connection = await r.connection(connectorId, {
      configuration: { tenant: "t1" },
      credentials: { api_key: key }
    })
    const { request } = await probe(connectorId, connection.id)
    expect(request.headers["x-api-key"]).toBe(`Token ${key}`)
    expect(request.headers.authorization).toBeUndefined()
  })

  it("api_key query → the named parameter only", async () => {
    const key = plant()
    const connectorId = await connectorFor({ type: "api_key", placement: "query", query_param: "api_key" })
    const connection = await r.connection(connectorId, {
      configuration: { tenant: "t2" },
      credentials: { api_key: key }
    })
    const { request } = await probe(connectorId, connection.id)
    expect(request.query.get("api_key")).toBe(key)
    expect(request.headers.authorization).toBeUndefined()
  })

  it("basic → Authorization: Basic base64(username:password)", async () => {
    const password = plant()
    const connectorId = await connectorFor({ type: "basic" })
    const connection = await r.connection(connectorId, {
      configuration: { tenant: "t3" },
      credentials: { username: "svc-user", password }
    })
    const { request } = await probe(connectorId, connection.id)
    expect(request.headers.authorization).toBe(`Basic ${Buffer.from(`svc-user:${password}`).toString("base64")}`)
  })

  it("oauth2 client credentials → token fetched at creation, sent as Bearer", async () => {
    const clientSecret = plant()
    const accessToken = plant()
    upstream.route("/token", (request) => {
      const form = new URLSearchParams(request.body.toString("utf8"))
      return form.get("client_secret") === clientSecret && form.get("grant_type") === "client_credentials"
        ? {
            status: 200,
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ access_token: accessToken, token_type: "bearer", expires_in: 3600 })
          }
        : {
            status: 401,
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ error: "invalid_client" })
          }
    })
    const connectorId = await connectorFor({
      type: "oauth2",
      grant_type: "client_credentials",
      token_endpoint: `${upstream.origin}/token`,
      client_auth: "client_secret_post",
      scopes: [{ name: "read" }]
    })
    const connection = await r.connection(connectorId, {
      configuration: { tenant: "t4" },
      credentials: { client_id: "svc-client", client_secret: clientSecret }
    })
    expect(connection.state).toBe("configured")
    const token = upstream
      .seen()
      .filter((seen) => seen.path === "/token")
      .at(-1)
    expect(new URLSearchParams(token?.body.toString("utf8")).get("scope")).toBe("read")
    const { request } = await probe(connectorId, connection.id)
    expect(request.headers.authorization).toBe(`Bearer ${accessToken}`)

    const rejected = await svc.call("POST", "/api/v1/connections", {
      body: {
        connectorId,
        configuration: { tenant: "t4" },
        credentials: { client_id: "svc-client", client_secret: "wrong" }
      }
    })
    const body = expectError(rejected, 400, "token_request_rejected")
    expect(body.error).not.toContain("wrong")
  })
})

describe("validation", () => {
  it("missing or malformed credentials are 400 naming the field", async () => {
    const connectorId = await connectorFor({ type: "api_key", placement: "bearer" })
    const missing = await svc.call("POST", "/api/v1/connections", {
      body: { connectorId, configuration: { tenant: "x" } }
    })
    expectError(missing, 400, "credentials_required")
    const wrong = await svc.call("POST", "/api/v1/connections", {
      body: { connectorId, configuration: { tenant: "x" }, credentials: { apikey: "k" } }
    })
    const body = expectError(wrong, 400, "invalid_credentials")
    expect(body.details?.map((detail) => detail.field)).toContain("body.credentials.api_key")
  })

  it("a missing required preconnect field is 400; configuration types are checked without echoing values", async () => {
    const connectorId = await connectorFor({ type: "none" })
    expectError(await svc.call("POST", "/api/v1/connections", { body: { connectorId } }), 400, "invalid_configuration")
    const sneaky = plant()
    const typed = await svc.call("POST", "/api/v1/connections", {
      body: { connectorId, configuration: { tenant: 5, webhook_secret: { nested: sneaky } } }
    })
    const body = expectError(typed, 400, "invalid_configuration")
    expect(JSON.stringify(body)).not.toContain(sneaky)
  })

  it("a missing required configure field leaves the connection in setup at that step", async () => {
    const connectorId = await connectorFor(
      { type: "none" },
      {
        setup_flow: {
          configure: {
            steps: [
              {
                id: "pick-project",
                json_schema: { type: "object", properties: { project: { type: "string" } }, required: ["project"] }
              }
            ]
          }
        },
        probes: []
      }
    )
    const pending = await r.connection(connectorId, {})
    expect(pending.state).toBe("setup")
    expect(pending.setupStepId).toBe("pick-project")
    const done = await r.connection(connectorId, { configuration: { project: "p1" } })
    expect(done.state).toBe("configured")
    expect(done.setupStepId).toBeNull()
  })
})

describe("rotation", () => {
  it("PUT credentials replaces the API key and keeps the id", async () => {
    const first = plant()
    const second = plant()
    const connectorId = await connectorFor({ type: "api_key", placement: "bearer" })
    const connection = await r.connection(connectorId, {
      configuration: { tenant: "rot" },
      credentials: { api_key: first }
    })
    const rotated = expectStatus<ConnectionBody>(
      await svc.call("PUT", `/api/v1/connections/${connection.id}/credentials`, {
        body: { credentials: { api_key: second } }
      }),
      200
    )
    expect(rotated.id).toBe(connection.id)
    const { request } = await probe(connectorId, connection.id)
    expect(request.headers.authorization).toBe(`Bearer ${second}`)
    const bad = await svc.call("PUT", `/api/v1/connections/${connection.id}/credentials`, {
      body: { credentials: { api_key: "" } }
    })
    expectError(bad, 400, "invalid_credentials")
  })
})

describe("probes drive health", () => {
  it("flips to unhealthy after the failure threshold and back after recovery", async () => {
    let status = 200
    upstream.route("/health/", () => ({ status, body: "" }))
    const connectorId = await connectorFor(
      { type: "none" },
      {
        setup_flow: {},
        probes: [
          {
            id: "ping",
            url: `${upstream.origin}/health/check`,
            period: "1s",
            timeout: "2s",
            failure_threshold: 2,
            recovery_threshold: 2
          }
        ]
      }
    )
    const connection = await r.connection(connectorId, {})
    const read = () => r.get<ConnectionBody>("connections", connection.id)
    const checks = () => upstream.seen().filter((seen) => seen.path === "/health/check").length
    await eventually(
      async () => checks(),
      (n) => n >= 2
    )
    expect((await read()).healthState).toBe("healthy")
    status = 503
    const failingFrom = checks()
    const unhealthy = await eventually(read, (c) => c.healthState === "unhealthy")
    expect(unhealthy.healthState).toBe("unhealthy")
    // The threshold is two consecutive failures: at least two failing checks ran before the flip.
    expect(checks() - failingFrom).toBeGreaterThanOrEqual(2)
    status = 200
    const healthy = await eventually(read, (c) => c.healthState === "healthy")
    expect(healthy.healthState).toBe("healthy")
    // Both flips were pushed to the namespace's webhook endpoint, signed.
    const flips = await eventually(
      async () =>
        receiver
          .received("/events")
          .filter(
            (e) => e.payload.type === "connection.health_changed" && e.payload.data.connection_id === connection.id
          ),
      (list) => list.length >= 2
    )
    expect(flips.map((e) => [e.payload.data.previous, e.payload.data.health_state, e.payload.data.reason])).toEqual([
      ["healthy", "unhealthy", "probe_failed"],
      ["unhealthy", "healthy", "probe_recovered"]
    ])
    for (const flip of flips) expect(flip.verifiedWith).toBe(0)
  }, 90_000)
})

describe("secrets stay secret", () => {
  it("never appear in API responses, logs or the database files", async () => {
    expect(secrets.length).toBeGreaterThan(5)
    // Positive control: a non-secret value written the same way is found, so the scan can see rows.
    const canary = `canary-${randomBytes(6).toString("hex")}`
    const connectorId = await connectorFor({ type: "api_key", placement: "bearer" })
    await r.connection(connectorId, { name: canary, configuration: { tenant: "c" }, credentials: { api_key: plant() } })
    const page = expectStatus<PageBody<ConnectionBody>>(await svc.call("GET", "/api/v1/connections?limit=1000"), 200)
    const api = JSON.stringify(page)
    const output = svc.output()
    const files = await filesUnder(path.join(svc.dir as string, ".svc"))
    expect(files.length).toBeGreaterThan(10)
    for (const secret of secrets) {
      expect(api).not.toContain(secret)
      expect(output).not.toContain(secret)
    }
    const needles = secrets.map((secret) => Buffer.from(secret))
    let canaryFound = false
    for (const file of files) {
      const content = await fs.readFile(file)
      if (content.includes(Buffer.from(canary))) canaryFound = true
      for (const needle of needles) expect(content.includes(needle), `${needle} in ${file}`).toBe(false)
    }
    expect(canaryFound).toBe(true)

    // Webhook bodies and the delivery log (issue 34): ids and states only, never a secret.
    const canaryConnection = page.items.find((c) => c.name === canary) as ConnectionBody
    await eventually(
      async () => receiver.received("/events").map((e) => e.payload.data.connection_id),
      (ids) => ids.includes(canaryConnection.id)
    )
    const bodies = receiver.received("/events").map((e) => `${e.webhookId} ${e.signature} ${e.body}`)
    expect(bodies.length).toBeGreaterThan(5)
    const log = JSON.stringify(
      expectStatus<PageBody<unknown>>(await svc.call("GET", `/api/v1/webhooks/${webhookId}/deliveries?limit=1000`), 200)
    )
    const webhookText = [...bodies, log, svc.output()].join("\n")
    for (const secret of secrets) expect(webhookText).not.toContain(secret)
  })
})
