/**
 * OAuth2 connections end to end against a real authorization server (oidc-provider on loopback),
 * black-box on the embedded default (issue 5): `_initiate` → the public service's redirect →
 * the provider's own login and consent forms → the callback → `configured` after the verify
 * probe; the token stored only encrypted; state replay, a wrong state, another browser and a
 * foreign return URL refused; an upstream 401 answered by one refresh and one retry; a revoked
 * refresh token making the connection unhealthy with one re-authentication notice; a preconnect
 * value a migration made required asked for by `_reauthorize` before its redirect; setup forms;
 * client-credentials tokens renewed; disconnect revoking at the provider.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConnectionBody,
  type ErrorBody,
  eventually,
  expectError,
  expectStatus,
  launch,
  resources,
  type Svc
} from "../support/Api.ts"
import { makeBrowser } from "../support/Browser.ts"
import { authorizationCodeAuth, type OAuthProvider, startOAuthProvider } from "../support/OAuthProvider.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

interface Next {
  readonly type: "redirect" | "form" | "complete"
  readonly stepId?: string
  readonly url?: string
  readonly phase?: string
  readonly json_schema?: Record<string, unknown>
}
interface Progress {
  readonly connection: ConnectionBody & { readonly grantedScopes?: ReadonlyArray<string> }
  readonly next: Next
}
interface NotificationBody {
  readonly key: string
  readonly action_url: string | null
  readonly metadata: Record<string, unknown>
}

const appOrigin = "https://app.example.test"
const clientSecret = `secret-${randomBytes(16).toString("hex")}`

let provider: OAuthProvider
let upstream: Upstream
let svc: Svc
let r: ReturnType<typeof resources>
let ns: string
let connectorId: string

const callbackUrl = () => `http://127.0.0.1:${svc.ports.public}/oauth2/callback`
const toApp = (url: string) => url.startsWith(appOrigin)
const toCallback = (url: string) => url.startsWith(callbackUrl())

const initiate = async (body: Record<string, unknown> = {}) =>
  expectStatus<Progress>(
    await svc.call("POST", "/api/v1/connections/_initiate", {
      body: { connectorId, returnToUrl: `${appOrigin}/done`, ...body }
    }),
    201
  )

const getConnection = async (id: string) =>
  expectStatus<ConnectionBody & { grantedScopes?: ReadonlyArray<string> }>(
    await svc.call("GET", `/api/v1/connections/${id}`),
    200
  )

/** Runs the browser leg to the application's return URL; answers that URL. */
const authorize = async (url: string) => {
  const browser = makeBrowser()
  const journey = await browser.authorizeAtProvider(url, { stopAt: toApp })
  expect(journey.stoppedAt, JSON.stringify(journey.hops)).toBeDefined()
  return { back: new URL(journey.stoppedAt ?? ""), journey, browser }
}

const connectNew = async () => {
  const started = await initiate()
  expect(started.next.type).toBe("redirect")
  const { back } = await authorize(started.next.url ?? "")
  expect(back.searchParams.get("status"), back.toString()).toBe("configured")
  return started.connection.id
}

const proxyResource = (id: string, resourcePath = "me") =>
  svc.call<{ statusCode: number; bodyJson?: Record<string, unknown> }>("POST", `/api/v1/connections/${id}/_proxy`, {
    body: { method: "GET", url: provider.endpoints.resource(resourcePath) }
  })

beforeAll(async () => {
  provider = await startOAuthProvider({ accessTokenTtl: 3600 })
  upstream = await startUpstream()
  upstream.route("/echo", (request) => ({
    status: 200,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ authorization: request.headers.authorization ?? null })
  }))
  svc = await launch("svc-e2e-oauth2-", {
    env: {
      SVC__outbound__allow_private_networks: "true",
      SVC__host_application__allowed_origins: `["${appOrigin}"]`,
      SVC__oauth2__clients: `[{client_id: svc-web, client_secret: {value: "${clientSecret}"}}]`
    }
  })
  await provider.addClient({
    client_id: "svc-web",
    client_secret: clientSecret,
    token_endpoint_auth_method: "client_secret_basic",
    redirect_uris: [callbackUrl()],
    grant_types: ["authorization_code", "refresh_token"],
    scope: "openid offline_access read write"
  })
  r = resources(svc)
  ns = await r.freshNamespace("oauth")
  const providerHost = new URL(provider.issuer).host
  const connector = await r.publishedConnector(ns, {
    definition: {
      type: "provider",
      auth: authorizationCodeAuth(provider, [{ name: "read", required: true }, { name: "write" }]),
      proxy: { allowed_hosts: [providerHost, `127.0.0.1:${upstream.port}`], allow_private_networks: true },
      probes: [{ id: "me", url: provider.endpoints.resource("me"), verify: true }]
    }
  })
  connectorId = connector.id
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  await upstream?.close()
  await provider?.close()
})

describe("authorization code with PKCE (issue 5)", () => {
  it("reaches configured through the provider's own login and consent, with scopes recorded", async () => {
    const started = await initiate()
    expect(started.connection.state).toBe("setup")
    expect(started.connection.setupStepId).toBe("svc:oauth2")
    expect(started.next.url?.startsWith(`http://127.0.0.1:${svc.ports.public}/oauth2/authorize?ticket=`)).toBe(true)

    const { back, journey, browser } = await authorize(started.next.url ?? "")
    const toProvider = new URL(journey.hops[0]?.location ?? "")
    expect(toProvider.origin + toProvider.pathname).toBe(provider.endpoints.authorization)
    expect(toProvider.searchParams.get("code_challenge_method")).toBe("S256")
    expect(toProvider.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(toProvider.searchParams.get("redirect_uri")).toBe(callbackUrl())
    expect(toProvider.searchParams.get("scope")).toBe("read write")
    expect(toProvider.searchParams.get("state")).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(back.searchParams.get("connection_id")).toBe(started.connection.id)
    expect(back.searchParams.get("status")).toBe("configured")
    // The flow cookie was HttpOnly and is cleared again.
    expect(browser.cookie(callbackUrl(), "svc_oauth2")).toBeUndefined()

    const connection = await getConnection(started.connection.id)
    expect(connection.state).toBe("configured")
    expect(connection.setupStepId).toBeNull()
    expect(connection.grantedScopes).toEqual(expect.arrayContaining(["read", "write"]))
    expect(provider.tokenCount("authorization_code", "success")).toBeGreaterThanOrEqual(1)
    // The verify probe ran through the connection against the protected resource.
    expect(provider.resourceRequests().some((request) => request.path.startsWith("/api/me"))).toBe(true)

    const proxied = expectStatus<{ statusCode: number; bodyJson: { client_id: string } }>(
      await proxyResource(started.connection.id),
      200
    )
    expect(proxied.statusCode).toBe(200)
    expect(proxied.bodyJson.client_id).toBe("svc-web")
  })

  it("stores the access and refresh tokens only encrypted", async () => {
    const id = await connectNew()
    const echoed = expectStatus<{ bodyJson: { authorization: string } }>(
      await svc.call("POST", `/api/v1/connections/${id}/_proxy`, {
        body: { method: "GET", url: `${upstream.origin}/echo` }
      }),
      200
    )
    const token = echoed.bodyJson.authorization.replace(/^Bearer /, "")
    expect(token.length).toBeGreaterThan(20)
    const needles = [token, Buffer.from(token).toString("base64"), clientSecret]
    const dataDir = path.join(svc.dir ?? "", ".svc")
    const files = (await fs.readdir(dataDir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile())
    expect(files.length).toBeGreaterThan(5)
    for (const file of files) {
      const content = await fs.readFile(path.join(file.parentPath, file.name))
      for (const needle of needles) expect(content.includes(needle), `${file.name} holds a secret`).toBe(false)
    }
    expect(svc.output()).not.toContain(token)
    expect(svc.output()).not.toContain(clientSecret)
  })

  it("refuses a replayed state, an unknown state, another browser and a foreign return URL", async () => {
    const started = await initiate()
    const browser = makeBrowser()
    const journey = await browser.authorizeAtProvider(started.next.url ?? "", { stopAt: toCallback })
    const callback = journey.stoppedAt ?? ""
    expect(callback).toContain("state=")
    // Another browser (no flow cookie) cannot complete it.
    const stranger = await makeBrowser().get(callback)
    expect(stranger.status).toBe(400)
    expect(stranger.body).not.toContain(new URL(callback).searchParams.get("code") ?? "-")
    // The state was consumed by that attempt: the owner cannot replay it either.
    const replay = await browser.get(callback)
    expect(replay.status).toBe(400)
    expect((await getConnection(started.connection.id)).state).toBe("setup")

    const again = await initiate()
    const second = makeBrowser()
    const done = await second.authorizeAtProvider(again.next.url ?? "", { stopAt: toCallback })
    const first = await second.get(done.stoppedAt ?? "")
    expect(first.status).toBe(302)
    expect(first.location?.startsWith(`${appOrigin}/done`)).toBe(true)
    expect((await second.get(done.stoppedAt ?? "")).status).toBe(400)

    const unknown = await makeBrowser().get(`${callbackUrl()}?state=${randomBytes(32).toString("base64url")}&code=x`)
    expect(unknown.status).toBe(400)
    expect(unknown.location).toBeUndefined()

    const ticketReplay = await makeBrowser().get(again.next.url ?? "")
    expect(ticketReplay.status).toBe(400)

    expectError(
      await svc.call("POST", "/api/v1/connections/_initiate", {
        body: { connectorId, returnToUrl: "https://evil.example/steal" }
      }),
      400,
      "return_url_not_allowed"
    )
  })

  it("answers an upstream 401 with one refresh and one retry", async () => {
    const id = await connectNew()
    const echoed = expectStatus<{ bodyJson: { authorization: string } }>(
      await svc.call("POST", `/api/v1/connections/${id}/_proxy`, {
        body: { method: "GET", url: `${upstream.origin}/echo` }
      }),
      200
    )
    const token = echoed.bodyJson.authorization.replace(/^Bearer /, "")
    expect(await provider.revokeToken(token)).toBe("access_token")
    const before = provider.tokenCount("refresh_token", "success")
    const resourceBefore = provider.resourceRequests().length
    const answer = expectStatus<{ statusCode: number }>(await proxyResource(id), 200)
    expect(answer.statusCode).toBe(200)
    expect(provider.tokenCount("refresh_token", "success")).toBe(before + 1)
    const calls = provider.resourceRequests().slice(resourceBefore)
    expect(calls.map((call) => call.status)).toEqual([401, 200])
  })

  it("marks a connection whose refresh token was revoked unhealthy with one re-authentication notice", async () => {
    const id = await connectNew()
    provider.revokeAll("refresh_token")
    provider.revokeAll("access_token")
    const failuresBefore = provider.tokenCount("refresh_token", "failure")
    const first = expectStatus<{ statusCode: number }>(await proxyResource(id), 200)
    expect(first.statusCode).toBe(401)
    expect(provider.tokenCount("refresh_token", "failure")).toBe(failuresBefore + 1)
    expect(provider.tokenRequests().at(-1)?.error).toBe("invalid_grant")
    const connection = await getConnection(id)
    expect(connection.healthState).toBe("unhealthy")

    const notices = async () =>
      expectStatus<{ items: ReadonlyArray<NotificationBody & { id: string }> }>(
        await svc.call("GET", "/api/v1/notifications?include_viewed=true&limit=1000"),
        200
      ).items.filter((notice) => notice.action_url === `/connections/${id}?action=reauth`)
    expect((await notices()).length).toBe(1)
    expect((await notices())[0]?.metadata.reason).toBe("invalid_grant")
    // A repeat is answered from the remembered failure (invalid_grant is remembered for 10
    // minutes, RefreshLease.permanentFailureMemoryMs): the provider is not asked again and the
    // notice stays the one notice. (That a failure after the memory expired reuses the notice is
    // TokenRefresher.test's "invalid_grant marks the connection unhealthy with one reauth notice".)
    expectStatus(await proxyResource(id), 200)
    expect(provider.tokenCount("refresh_token", "failure")).toBe(failuresBefore + 1)
    expect((await notices()).length).toBe(1)

    // Re-authorising restores health and resolves the notice.
    const re = expectStatus<Progress>(
      await svc.call("POST", `/api/v1/connections/${id}/_reauthorize`, { body: { returnToUrl: `${appOrigin}/x` } }),
      200
    )
    const { back } = await authorize(re.next.url ?? "")
    expect(back.searchParams.get("status")).toBe("configured")
    expect((await getConnection(id)).healthState).toBe("healthy")
    expect((await notices()).length).toBe(0)
  }, 90_000)

  it("asks for a preconnect value a migration made required before the redirect of _reauthorize (spec 4.3 rule 4)", async () => {
    const definition = (preconnect: boolean) => ({
      type: "provider",
      auth: authorizationCodeAuth(provider, [{ name: "read", required: true }, { name: "write" }]),
      proxy: { allowed_hosts: [new URL(provider.issuer).host], allow_private_networks: true },
      ...(preconnect
        ? {
            setup_flow: {
              preconnect: {
                steps: [
                  {
                    id: "tenant",
                    json_schema: {
                      type: "object",
                      properties: { tenant: { type: "string", minLength: 2 } },
                      required: ["tenant"],
                      additionalProperties: false
                    }
                  }
                ]
              }
            }
          }
        : {})
    })
    const connector = await r.publishedConnector(ns, { definition: definition(false) })
    const started = await initiate({ connectorId: connector.id })
    expect((await authorize(started.next.url ?? "")).back.searchParams.get("status")).toBe("configured")
    const id = started.connection.id
    const v2 = expectStatus<{ version: number }>(
      await svc.call("POST", `/api/v1/connectors/${connector.id}/versions`, { body: { definition: definition(true) } }),
      201
    )
    await r.publish(connector.id, v2.version)
    const handle = expectStatus<{ task_id: string }>(
      await svc.call("POST", `/api/v1/connections/${id}/_migrate_version`, { body: { target_version: v2.version } }),
      202
    )
    const task = await eventually(
      async () => expectStatus<{ state: string }>(await svc.call("GET", `/api/v1/tasks/${handle.task_id}`), 200),
      (body) => body.state !== "active"
    )
    expect(task.state).toBe("completed")
    const notices = async () =>
      expectStatus<{ items: ReadonlyArray<NotificationBody> }>(
        await svc.call("GET", "/api/v1/notifications?include_viewed=true&limit=200"),
        200
      ).items.filter((notice) => notice.action_url === `/connections/${id}?action=reauth`)
    expect((await notices()).length).toBe(1)
    expect((await getConnection(id)).healthState).toBe("unhealthy")

    // The form first; the connection keeps proxying with its current tokens.
    const re = expectStatus<Progress>(
      await svc.call("POST", `/api/v1/connections/${id}/_reauthorize`, { body: { returnToUrl: `${appOrigin}/re` } }),
      200
    )
    expect(re.next).toMatchObject({ type: "form", stepId: "tenant", phase: "preconnect" })
    expect(expectStatus<{ statusCode: number }>(await proxyResource(id), 200).statusCode).toBe(200)
    const submit = (values: Record<string, unknown>) =>
      svc.call<Progress>("POST", `/api/v1/connections/${id}/_setup`, { body: { stepId: "tenant", values } })
    expectError(await submit({ tenant: "x" }), 400, "invalid_configuration")
    const next = expectStatus<Progress>(await submit({ tenant: "acme" }), 200)
    expect(next.next.type).toBe("redirect")
    // Stored before the redirect; health and the notice wait for the provider.
    expect((await getConnection(id)).healthState).toBe("unhealthy")
    const { back } = await authorize(next.next.url ?? "")
    expect(back.origin + back.pathname).toBe(`${appOrigin}/re`)
    expect(back.searchParams.get("status")).toBe("configured")
    const healed = await getConnection(id)
    expect(healed).toMatchObject({ state: "configured", healthState: "healthy" })
    const stored = expectStatus<{ configuration: Record<string, unknown> }>(
      await svc.call("GET", `/api/v1/connections/${id}`),
      200
    )
    expect(stored.configuration).toMatchObject({ tenant: "acme" })
    expect((await notices()).length).toBe(0)
    expect(expectStatus<{ statusCode: number }>(await proxyResource(id), 200).statusCode).toBe(200)
    // Nothing is missing any more: _reauthorize answers the redirect at once.
    const again = expectStatus<Progress>(
      await svc.call("POST", `/api/v1/connections/${id}/_reauthorize`, { body: {} }),
      200
    )
    expect(again.next.type).toBe("redirect")
  }, 90_000)

  it("revokes the tokens at the provider on disconnect", async () => {
    const id = await connectNew()
    const before = provider.revocations().length
    const handle = expectStatus<{ taskId: string; connectionId: string }>(
      await svc.call("POST", `/api/v1/connections/${id}/_disconnect`, { body: {} }),
      202
    )
    expect(handle.connectionId).toBe(id)
    const task = await eventually(
      async () => expectStatus<{ state: string }>(await svc.call("GET", `/api/v1/tasks/${handle.taskId}`), 200),
      (body) => body.state !== "active"
    )
    expect(task).toMatchObject({ type: "disconnect", state: "completed", progress: { total: 1, done: 1 } })
    const seen = provider.revocations().slice(before)
    expect(seen.map((x) => x.tokenTypeHint)).toEqual(["refresh_token", "access_token"])
    expect(seen[0]?.tokenKind).toBe("refresh_token")
    expectError(await svc.call("GET", `/api/v1/connections/${id}`), 404, "not_found")
  })
})

describe("connector lifecycle against the real provider (issue 17)", () => {
  it("archive revokes every connection's tokens at the provider, then archives the connector", async () => {
    const connector = await r.publishedConnector(ns, {
      name: `archived-${Math.random().toString(36).slice(2, 8)}`,
      definition: expectStatus<{ definition: unknown }>(
        await svc.call("GET", `/api/v1/connectors/${connectorId}/versions/1`),
        200
      ).definition
    })
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const started = await initiate({ connectorId: connector.id })
      const { back } = await authorize(started.next.url ?? "")
      expect(back.searchParams.get("status"), back.toString()).toBe("configured")
      ids.push(started.connection.id)
    }
    const before = provider.revocations().length
    const handle = expectStatus<{ taskId: string }>(
      await svc.call("POST", `/api/v1/connectors/${connector.id}/_archive`, { body: { timeoutSeconds: 60 } }),
      202
    )
    const task = await eventually(
      async () => expectStatus<{ state: string }>(await svc.call("GET", `/api/v1/tasks/${handle.taskId}`), 200),
      (body) => body.state !== "active"
    )
    expect(task).toMatchObject({ type: "archive", state: "completed", progress: { total: 3, done: 3 } })
    const seen = provider.revocations().slice(before)
    // Each connection: its refresh token and its access token, each revoked once.
    expect(seen.map((x) => x.tokenTypeHint).sort()).toEqual([
      "access_token",
      "access_token",
      "access_token",
      "refresh_token",
      "refresh_token",
      "refresh_token"
    ])
    for (const id of ids) expectError(await svc.call("GET", `/api/v1/connections/${id}`), 404, "not_found")
    expect(provider.serverErrors()).toEqual([])
  }, 120_000)
})

describe("setup without a browser redirect (issue 5)", () => {
  it("walks preconnect, credentials and configure forms, then the verify probe", async () => {
    upstream.route("/verify", (request) =>
      request.headers.authorization === "Bearer key-123" ? { status: 200, body: "{}" } : { status: 401 }
    )
    const connector = await r.publishedConnector(ns, {
      definition: {
        type: "forms",
        auth: { type: "api_key", placement: "bearer" },
        proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true },
        probes: [{ id: "check", url: `${upstream.origin}/verify/{{cfg.tenant}}`, verify: true }],
        setup_flow: {
          preconnect: {
            steps: [
              {
                id: "tenant",
                json_schema: { type: "object", properties: { tenant: { type: "string" } }, required: ["tenant"] }
              }
            ]
          },
          configure: {
            steps: [
              {
                id: "region",
                json_schema: {
                  type: "object",
                  properties: { region: { type: "string", enum: ["eu", "us"] } },
                  required: ["region"]
                }
              }
            ]
          }
        }
      }
    })
    const started = expectStatus<Progress>(
      await svc.call("POST", "/api/v1/connections/_initiate", { body: { connectorId: connector.id } }),
      201
    )
    const id = started.connection.id
    expect(started.next).toMatchObject({ type: "form", stepId: "tenant", phase: "preconnect" })
    const submit = (stepId: string, values: Record<string, unknown>) =>
      svc.call<Progress | ErrorBody>("POST", `/api/v1/connections/${id}/_setup`, { body: { stepId, values } })
    expectError(await submit("tenant", {}), 400, "invalid_configuration")
    expectError(await submit("region", { region: "eu" }), 409, "setup_step_mismatch")
    const afterTenant = expectStatus<Progress>(await submit("tenant", { tenant: "acme" }), 200)
    expect(afterTenant.next).toMatchObject({ type: "form", stepId: "svc:credentials", phase: "credentials" })
    // A mistyped key: the verify probe refuses it and the connection stays at svc:verify.
    const afterKey = expectStatus<Progress>(await submit("svc:credentials", { api_key: "key-typo" }), 200)
    expect(afterKey.next).toMatchObject({ type: "form", stepId: "region", phase: "configure" })
    expect(afterKey.connection.setupStepId).toBe("region")
    expectError(await submit("region", { region: "eu" }), 409, "verification_failed")
    const progress = async () =>
      expectStatus<Progress>(await svc.call("GET", `/api/v1/connections/${id}/_setup`), 200).connection
    expect((await progress()).setupStepId).toBe("svc:verify")
    // At svc:verify the answer lists the editable steps with their non-secret values (never the key).
    const atVerify = expectStatus<Progress & { answered?: ReadonlyArray<{ stepId: string; values: unknown }> }>(
      await svc.call("GET", `/api/v1/connections/${id}/_setup`),
      200
    )
    expect(atVerify.answered?.map((a) => [a.stepId, a.values])).toEqual([
      ["tenant", { tenant: "acme" }],
      ["svc:credentials", {}],
      ["region", { region: "eu" }]
    ])
    expect(JSON.stringify(atVerify)).not.toContain("key-typo")
    expect(afterTenant).not.toHaveProperty("answered")
    // While it stands at svc:verify an earlier step may be submitted again (edited): the probes run again.
    expectError(await submit("region", { region: "us" }), 409, "verification_failed")
    expect(await progress()).toMatchObject({
      setupStepId: "svc:verify",
      configuration: { tenant: "acme", region: "us" }
    })
    expectError(await submit("svc:oauth2", {}), 409, "setup_step_mismatch")
    const done = expectStatus<Progress>(await submit("svc:credentials", { api_key: "key-123" }), 200)
    expect(done.next.type).toBe("complete")
    expect(done.connection.state).toBe("configured")
    expect(done.connection.configuration).toEqual({ tenant: "acme", region: "us" })
    const verified = upstream.seen().filter((request) => request.path === "/verify/acme")
    expect(verified.map((request) => request.headers.authorization)).toEqual([
      "Bearer key-typo",
      "Bearer key-typo",
      "Bearer key-123"
    ])
    // Once configured, no step can be submitted again.
    expectError(await submit("region", { region: "eu" }), 409, "setup_step_mismatch")
  })

  it("chooses the namespace as spec 4.1 says, and never from wildcards", async () => {
    const child = (await r.namespace(`${ns}.team`)).path
    const other = (await r.namespace(`${ns}.other`)).path
    const make = async (externalId: string, permissions: ReadonlyArray<Record<string, unknown>>) => {
      await r.create("actors", { externalId, namespace: "root", permissions })
      return svc.sign(externalId)
    }
    const get = { namespace: ns, resources: ["connectors"], verbs: ["get"] }
    const single = await make(`single-${randomBytes(3).toString("hex")}`, [
      get,
      { namespace: child, resources: ["connections"], verbs: ["create"] }
    ])
    const chosen = expectStatus<Progress>(
      await svc.call("POST", "/api/v1/connections/_initiate", {
        token: single,
        body: { connectorId, returnToUrl: `${appOrigin}/x` }
      }),
      201
    )
    expect(chosen.connection.namespace).toBe(child)
    const several = await make(`several-${randomBytes(3).toString("hex")}`, [
      get,
      { namespace: child, resources: ["connections"], verbs: ["create"] },
      { namespace: other, resources: ["connections"], verbs: ["create"] }
    ])
    expectError(
      await svc.call("POST", "/api/v1/connections/_initiate", { token: several, body: { connectorId } }),
      400,
      "into_namespace_required"
    )
    const wildcard = await make(`wild-${randomBytes(3).toString("hex")}`, [
      get,
      { namespace: `${child}.**`, resources: ["connections"], verbs: ["create"] }
    ])
    const refused = expectError(
      await svc.call("POST", "/api/v1/connections/_initiate", { token: wildcard, body: { connectorId } }),
      400,
      "into_namespace_required"
    )
    expect(refused.details?.[0]?.field).toBe("body.intoNamespace")
    const explicit = expectStatus<Progress>(
      await svc.call("POST", "/api/v1/connections/_initiate", {
        token: wildcard,
        body: { connectorId, intoNamespace: child }
      }),
      201
    )
    expect(explicit.connection.namespace).toBe(child)
  })

  it("keeps client-credentials tokens fresh", async () => {
    await provider.addClient({
      client_id: "svc-machine",
      client_secret: clientSecret,
      token_endpoint_auth_method: "client_secret_post",
      grant_types: ["client_credentials"],
      scope: "read"
    })
    provider.setAccessTokenTtl(2)
    try {
      const connector = await r.publishedConnector(ns, {
        definition: {
          type: "machine",
          auth: {
            type: "oauth2",
            grant_type: "client_credentials",
            token_endpoint: provider.endpoints.token,
            client_auth: "client_secret_post",
            scopes: [{ name: "read" }]
          },
          proxy: { allowed_hosts: [new URL(provider.issuer).host], allow_private_networks: true }
        }
      })
      const connection = await r.connection(connector.id, {
        credentials: { client_id: "svc-machine", client_secret: clientSecret }
      })
      const before = provider.tokenCount("client_credentials", "success")
      await new Promise((resolve) => setTimeout(resolve, 2500))
      const answers = await Promise.all(Array.from({ length: 5 }, () => proxyResource(connection.id)))
      for (const answer of answers) expect(expectStatus<{ statusCode: number }>(answer, 200).statusCode).toBe(200)
      expect(provider.tokenCount("client_credentials", "success")).toBe(before + 1)
    } finally {
      provider.setAccessTokenTtl(3600)
    }
  })
})

describe("authorization timeout (issue 5)", () => {
  it("refuses a state that expired before the provider redirected back", async () => {
    const short = await launch("svc-e2e-oauth2-expiry-", {
      env: {
        SVC__outbound__allow_private_networks: "true",
        SVC__host_application__allowed_origins: `["${appOrigin}"]`,
        SVC__oauth2__clients: `[{client_id: svc-web, client_secret: {value: "${clientSecret}"}}]`,
        SVC__oauth2__authorization_timeout: "2s"
      }
    })
    try {
      const callback = `http://127.0.0.1:${short.ports.public}/oauth2/callback`
      await provider.addClient({
        client_id: "svc-web",
        client_secret: clientSecret,
        token_endpoint_auth_method: "client_secret_basic",
        redirect_uris: [callbackUrl(), callback],
        grant_types: ["authorization_code", "refresh_token"],
        scope: "openid offline_access read write"
      })
      const sr = resources(short)
      const space = await sr.freshNamespace("exp")
      const original = expectStatus<{ definition: Record<string, unknown> }>(
        await svc.call("GET", `/api/v1/connectors/${connectorId}/versions/1`),
        200
      )
      const connector = await sr.publishedConnector(space, { definition: original.definition })
      const started = expectStatus<Progress>(
        await short.call("POST", "/api/v1/connections/_initiate", {
          body: { connectorId: connector.id, returnToUrl: `${appOrigin}/done` }
        }),
        201
      )
      const browser = makeBrowser()
      const journey = await browser.authorizeAtProvider(started.next.url ?? "", {
        stopAt: (url) => url.startsWith(callback)
      })
      await new Promise((resolve) => setTimeout(resolve, 2600))
      const late = await browser.get(journey.stoppedAt ?? "")
      expect(late.status).toBe(400)
      const connection = expectStatus<ConnectionBody>(
        await short.call("GET", `/api/v1/connections/${started.connection.id}`),
        200
      )
      expect(connection.state).toBe("setup")
    } finally {
      await short.stop()
    }
  }, 120_000)
})
