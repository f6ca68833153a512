import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import { ConnectorDefinition, decodeConnectorDefinition } from "./ConnectorDefinition.ts"
import { issueDetails } from "./Errors.ts"

const proxy = { allowed_hosts: ["api.example.com"] }

const complete = (auth: Record<string, unknown>) => ({
  type: "example",
  display_name: "Example",
  description: "A complete definition",
  logo_url: "https://cdn.example.com/logo.png",
  auth,
  setup_flow: {
    preconnect: {
      steps: [
        {
          id: "region",
          title: "Region",
          json_schema: {
            type: "object",
            properties: { region: { type: "string", default: "us" } },
            required: ["region"]
          }
        }
      ]
    },
    configure: {
      steps: [{ id: "project", json_schema: { type: "object", properties: { project: { type: "string" } } } }]
    }
  },
  probes: [{ id: "me", url: "https://api.example.com/{{cfg.region}}/me", period: "1m" }],
  proxy,
  rate_limiting: { exponential_backoff: {} },
  telemetry: { propagateTraceContext: false },
  javascript: "function up(cfg) { return {} }",
  migrations: { up: { javascript: "up(cfg)" }, down: { javascript: "({})" } }
})

const oauth2 = { type: "oauth2", token_endpoint: "https://auth.example.com/token" }

const auths: Record<string, Record<string, unknown>> = {
  none: { type: "none" },
  bearer: { type: "api_key", placement: "bearer" },
  header: { type: "api_key", placement: "header", header_name: "X-Api-Key", prefix: "Key " },
  query: { type: "api_key", placement: "query", query_param: "api_key" },
  basic: { type: "basic" },
  authorizationCode: {
    ...oauth2,
    grant_type: "authorization_code",
    authorization_endpoint: "https://auth.example.com/authorize",
    scopes: [{ name: "read", required: true }]
  },
  clientCredentials: { ...oauth2, grant_type: "client_credentials" }
}

const decode = (input: unknown) => Effect.runSyncExit(decodeConnectorDefinition(input))

const fields = (input: unknown): Array<string> => {
  const exit = decode(input)
  if (Exit.isSuccess(exit)) return assert.fail("expected a failure")
  const reason = exit.cause.reasons[0]
  if (reason?._tag !== "Fail") return assert.fail("expected a typed failure")
  return issueDetails(reason.error.issue).map((detail) => detail.field)
}

describe("ConnectorDefinition", () => {
  for (const [name, auth] of Object.entries(auths)) {
    it(`a complete ${name} definition decodes with defaults, and decodes to itself again`, () => {
      const exit = decode(complete(auth))
      assert.isTrue(Exit.isSuccess(exit), JSON.stringify(exit))
      if (Exit.isFailure(exit)) return
      const value = exit.value
      assert.deepStrictEqual(value.proxy.timeouts, { connect: "5s", first_byte: "30s", total: "60s" })
      assert.deepStrictEqual(value.rate_limiting.exponential_backoff, {
        initial_interval: "1s",
        multiplier: 2,
        max_interval: "5m",
        jitter_fraction: 0.1
      })
      assert.strictEqual(value.probes?.[0]?.timeout, "10s")
      assert.deepStrictEqual(decode(value), Exit.succeed(value))
      assert.deepStrictEqual(Schema.encodeSync(ConnectorDefinition)(value), value)
      assert.deepStrictEqual(Schema.decodeUnknownSync(ConnectorDefinition)(value), value)
    })
  }

  it("fills OAuth2 defaults from the auth schema", () => {
    const exit = decode({ type: "x", auth: auths.authorizationCode })
    assert.isTrue(Exit.isSuccess(exit))
    if (Exit.isFailure(exit)) return
    assert.deepStrictEqual<unknown>(exit.value.auth, {
      ...oauth2,
      client_auth: "client_secret_basic",
      scopes: [{ name: "read", required: true }],
      scope_separator: " ",
      grant_type: "authorization_code",
      authorization_endpoint: "https://auth.example.com/authorize",
      pkce: "S256",
      refresh: { enabled: true, before_expiry: "5m" }
    })
  })

  it("dispatches on auth.type, placement and grant_type so errors name the field", () => {
    const auth = (value: unknown) => fields({ type: "x", auth: value })
    assert.deepStrictEqual(auth({ type: "api_key", placement: "header" }), ["auth.header_name"])
    assert.deepStrictEqual(auth({ type: "api_key", placement: "cookie" }), ["auth.placement"])
    assert.deepStrictEqual(auth({ type: "oauth2", grant_type: "password" }), ["auth.grant_type"])
    assert.deepStrictEqual(
      auth({ type: "oauth2", grant_type: "authorization_code", token_endpoint: "https://a.example" }),
      ["auth.authorization_endpoint"]
    )
    assert.deepStrictEqual(auth({ type: "digest" }), ["auth.type"])
    for (const header_name of ["Host", "transfer-encoding", "X-Svc-Upstream-URL", "Proxy-Authorization"]) {
      assert.deepStrictEqual(auth({ type: "api_key", placement: "header", header_name }), ["auth.header_name"])
    }
    const client = { type: "oauth2", grant_type: "client_credentials", token_endpoint: "https://a.example/t" }
    assert.deepStrictEqual(auth({ ...client, scope_separator: "" }), ["auth.scope_separator"])
    assert.deepStrictEqual(auth(null), ["auth"])
  })

  it("reports problems elsewhere in the document together with an auth problem", () => {
    assert.deepStrictEqual(fields({ type: "Bad Type", auth: { type: "nope" }, extra: 1 }).sort(), [
      "auth.type",
      "extra",
      "type"
    ])
  })

  it("rejects unknown keys in every block", () => {
    const base = { type: "x", auth: { type: "none" } }
    assert.deepStrictEqual(fields({ ...base, telemetry: { propagate_trace_context: true } }), [
      "telemetry.propagate_trace_context"
    ])
    assert.deepStrictEqual(fields({ ...base, migrations: { up: { javascript: "f()", js: "" } } }), ["migrations.up.js"])
    assert.deepStrictEqual(fields({ ...base, probes: [{ id: "p", url: "https://a.example/", retries: 1 }] }), [
      "probes[0].retries"
    ])
    assert.deepStrictEqual(fields({ ...base, setup_flow: { connect: { steps: [] } } }), ["setup_flow.connect"])
  })

  it("validates metadata and hook sources", () => {
    const base = { type: "x", auth: { type: "none" } }
    assert.deepStrictEqual(fields({ ...base, logo_url: "http://cdn.example.com/l.png" }), ["logo_url"])
    assert.deepStrictEqual(fields({ ...base, logo_url: "https://user:pw@cdn.example.com/l.png" }), ["logo_url"])
    assert.deepStrictEqual(fields({ ...base, javascript: "  \n" }), ["javascript"])
    assert.deepStrictEqual(fields({ ...base, migrations: { down: { javascript: "x".repeat(256 * 1024 + 1) } } }), [
      "migrations.down.javascript"
    ])
  })

  it("checks probe ids, placeholders and hosts across blocks", () => {
    const base = { type: "x", auth: { type: "none" }, proxy }
    assert.deepStrictEqual(
      fields({
        ...base,
        probes: [
          { id: "p", url: "https://api.example.com/{{cfg.region}}" },
          { id: "p", url: "https://api.example.com/", headers: { "X-Region": "{{cfg.zone}}" } },
          { id: "q", url: "https://api.example.com:8443/" }
        ]
      }),
      ["probes[0].url", "probes[1].id", "probes[1].headers.X-Region", "probes[2].url"]
    )
    const ok = decode({
      ...base,
      setup_flow: {
        preconnect: {
          steps: [{ id: "s", json_schema: { type: "object", properties: { tenant: { type: "string" } } } }]
        }
      },
      probes: [{ id: "p", url: "https://{{cfg.tenant}}.elsewhere.example:{{cfg.tenant}}/" }]
    })
    assert.isTrue(Exit.isSuccess(ok), "a host or port from configuration is checked at run time")
  })
})
