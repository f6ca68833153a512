/**
 * The OAuth2 counters' projected labels black-box (issue 20; spec 8.3: `proxy.metricDimensionLabels`
 * are "projected as metric attributes (proxy and OAuth2 counters)"): the embedded default with
 * the Prometheus scrape on, a connector and a connection with labels, a real authorization-code
 * exchange and a disconnect revoking both tokens at a real provider (oidc-provider). The
 * token-exchange and revocation series carry `svc.label.<key>` of the connector's labels overridden
 * by the connection's, only for allowlisted keys, and never the connector id.
 */
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ConnectionBody, eventually, expectStatus, launch, resources, type Svc } from "../support/Api.ts"
import { makeBrowser } from "../support/Browser.ts"
import { authorizationCodeAuth, type OAuthProvider, startOAuthProvider } from "../support/OAuthProvider.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

const appOrigin = "https://app.example.test"
const clientSecret = `secret-${randomBytes(16).toString("hex")}`

let provider: OAuthProvider
let upstream: Upstream
let svc: Svc
let connectorId: string

const callbackUrl = () => `http://127.0.0.1:${svc.ports.public}/oauth2/callback`

/** The scraped series of `metric`: each sample's labels and value. */
const series = async (metric: string) => {
  const text = await (await fetch(`http://127.0.0.1:${svc.ports.metrics}/metrics`)).text()
  return text
    .split("\n")
    .filter((line) => line.startsWith(`${metric}{`) || line.startsWith(`${metric} `))
    .map((line) => {
      const match = /^[^{ ]+(?:\{(.*)\})? (\S+)$/.exec(line)
      const labels = Object.fromEntries(
        [...(match?.[1] ?? "").matchAll(/([A-Za-z_][A-Za-z0-9_]*)="([^"]*)"/g)].map((m) => [m[1], m[2]])
      )
      return { ...labels, value: Number(match?.[2]) }
    })
}

beforeAll(async () => {
  provider = await startOAuthProvider({ accessTokenTtl: 3600 })
  upstream = await startUpstream()
  svc = await launch("svc-e2e-oauth2-telemetry-", {
    env: {
      SVC__outbound__allow_private_networks: "true",
      SVC__host_application__allowed_origins: `["${appOrigin}"]`,
      SVC__oauth2__clients: `[{client_id: svc-web, client_secret: {value: "${clientSecret}"}}]`,
      SVC__telemetry__prometheus__enabled: "true",
      SVC__telemetry__proxy__metricDimensionLabels: "[team, tier]"
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
  const r = resources(svc)
  const ns = await r.freshNamespace("oauthotel")
  const connector = await r.publishedConnector(ns, {
    labels: { team: "connector-team", tier: "gold", owner: "not-projected" },
    definition: {
      type: "provider",
      auth: authorizationCodeAuth(provider, [{ name: "read", required: true }]),
      proxy: { allowed_hosts: [new URL(provider.issuer).host], allow_private_networks: true }
    }
  })
  connectorId = connector.id
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  await provider?.close()
  await upstream?.close()
})

describe("OAuth2 counters with projected labels (spec 8.3)", () => {
  it("count the code exchange and both revocations with the connector's then the connection's labels", async () => {
    const started = expectStatus<{ connection: ConnectionBody; next: { url?: string } }>(
      await svc.call("POST", "/api/v1/connections/_initiate", {
        body: { connectorId, returnToUrl: `${appOrigin}/done` }
      }),
      201
    )
    const id = started.connection.id
    // The connection's own `team` wins over the connector's; `tier` comes from the connector.
    expectStatus(await svc.call("PATCH", `/api/v1/connections/${id}`, { body: { labels: { team: "red" } } }), 200)
    const journey = await makeBrowser().authorizeAtProvider(started.next.url ?? "", {
      stopAt: (url) => url.startsWith(appOrigin)
    })
    expect(new URL(journey.stoppedAt ?? "").searchParams.get("status"), JSON.stringify(journey.hops)).toBe("configured")
    const labels = { svc_label_team: "red", svc_label_tier: "gold" }
    expect(await series("svc_oauth2_token_exchange_attempts_total")).toEqual([
      { result: "success", ...labels, value: 1 }
    ])

    const handle = expectStatus<{ taskId: string }>(
      await svc.call("POST", `/api/v1/connections/${id}/_disconnect`, { body: {} }),
      202
    )
    await eventually(
      async () => expectStatus<{ state: string }>(await svc.call("GET", `/api/v1/tasks/${handle.taskId}`), 200),
      (task) => task.state === "completed"
    )
    expect(await series("svc_oauth2_revocations_total")).toEqual([
      { revocation_kind: "refresh_token", result: "success", ...labels, value: 1 },
      { revocation_kind: "access_token", result: "success", ...labels, value: 1 }
    ])
    const text = await (await fetch(`http://127.0.0.1:${svc.ports.metrics}/metrics`)).text()
    const oauth2 = text.split("\n").filter((line) => line.startsWith("svc_oauth2_"))
    expect(oauth2.join("\n")).not.toContain(connectorId)
    expect(oauth2.join("\n")).not.toContain("not-projected")
  }, 90_000)

  it("count the first token of a client-credentials connection as a token exchange, with its labels", async () => {
    upstream.route("/token", () => ({
      status: 200,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        access_token: `at-${randomBytes(8).toString("hex")}`,
        token_type: "bearer",
        expires_in: 3600
      })
    }))
    const r = resources(svc)
    const ns = await r.freshNamespace("ccotel")
    const connector = await r.publishedConnector(ns, {
      labels: { team: "connector-team", tier: "silver" },
      definition: {
        type: "cc",
        auth: {
          type: "oauth2",
          grant_type: "client_credentials",
          token_endpoint: `${upstream.origin}/token`,
          client_auth: "client_secret_post",
          scopes: [{ name: "read" }]
        },
        proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
      }
    })
    const connection = await r.connection(connector.id, {
      labels: { team: "blue" },
      credentials: { client_id: "svc-client", client_secret: "cc-secret" }
    })
    expect(connection.state).toBe("configured")
    expect(await series("svc_oauth2_token_exchange_attempts_total")).toContainEqual({
      result: "success",
      svc_label_team: "blue",
      svc_label_tier: "silver",
      value: 1
    })
  }, 90_000)
})
