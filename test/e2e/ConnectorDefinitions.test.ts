/**
 * Connector definition documents over real HTTP: YAML and JSON text accepted, defaults
 * materialised in the stored version, invalid documents and hook syntax errors rejected with
 * `invalid_definition` naming the field (docs/connector-definitions.md).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ConnectorBody,
  expectError,
  expectStatus,
  launch,
  rand,
  resources,
  type Svc,
  type VersionBody
} from "../support/Api.ts"

let svc: Svc
let r: ReturnType<typeof resources>

beforeAll(async () => {
  svc = await launch("svc-e2e-definitions-")
  r = resources(svc)
}, 90_000)

afterAll(async () => {
  await svc?.stop()
})

const yamlDefinition = `
type: acme
display_name: Acme
auth:
  type: api_key
  placement: header
  header_name: X-Api-Key
proxy:
  allowed_hosts: ["api.acme.example"]
probes:
  - id: me
    url: https://api.acme.example/me
rate_limiting:
  exponential_backoff: {}
migrations:
  up:
    javascript: "({ config: { set: { migrated: true } } })"
`

const post = async (definition: unknown) =>
  svc.call("POST", "/api/v1/connectors", { body: { namespace: await r.freshNamespace("def"), definition } })

const version = async (connectorId: string, v: number) =>
  expectStatus<VersionBody & { definition: Record<string, unknown> }>(
    await svc.call("GET", `/api/v1/connectors/${connectorId}/versions/${v}`),
    200
  )

const fieldsOf = (reply: Awaited<ReturnType<typeof post>>) =>
  (expectError(reply, 400, "invalid_definition").details ?? []).map((detail) => detail.field)

describe("connector definition documents", () => {
  it("accepts a YAML string and stores the document with its defaults materialised", async () => {
    const created = expectStatus<ConnectorBody>(await post(yamlDefinition), 201)
    expect(created.type).toBe("acme")
    const stored = (await version(created.id, 1)).definition
    expect(stored).toEqual({
      type: "acme",
      display_name: "Acme",
      auth: { type: "api_key", placement: "header", header_name: "X-Api-Key" },
      probes: [
        {
          id: "me",
          method: "GET",
          url: "https://api.acme.example/me",
          timeout: "10s",
          enabled: true,
          verify: false,
          failure_threshold: 3,
          recovery_threshold: 1
        }
      ],
      proxy: {
        allowed_hosts: ["api.acme.example"],
        allow_private_networks: false,
        timeouts: { connect: "5s", first_byte: "30s", total: "60s" },
        max_concurrent_requests: 16
      },
      rate_limiting: {
        disabled: false,
        retry_after_headers: ["Retry-After"],
        max_retry_after: "15m",
        default_retry_after: "60s",
        exponential_backoff: { initial_interval: "1s", multiplier: 2, max_interval: "5m", jitter_fraction: 0.1 }
      },
      migrations: { up: { javascript: "({ config: { set: { migrated: true } } })" } }
    })
    const again = expectStatus<VersionBody>(
      await svc.call("POST", `/api/v1/connectors/${created.id}/versions`, { body: { definition: stored } }),
      201
    )
    expect(again.definition).toEqual(stored)
  })

  it("accepts a JSON string and an object alike", async () => {
    const document = { type: "plain", auth: { type: "none" } }
    const fromText = expectStatus<ConnectorBody>(await post(JSON.stringify(document)), 201)
    const fromObject = expectStatus<ConnectorBody>(await post(document), 201)
    expect((await version(fromText.id, 1)).definition).toEqual((await version(fromObject.id, 1)).definition)
  })

  it("rejects an invalid definition naming each bad field", async () => {
    expect(
      await post({ type: "x", auth: { type: "api_key", placement: "header" }, proxy: { alowed_hosts: [] } }).then(
        fieldsOf
      )
    ).toEqual(["body.definition.auth.header_name", "body.definition.proxy.alowed_hosts"])
    expect(await post("type: x\nauth: [none\n").then(fieldsOf)).toEqual(["body.definition"])
    expect(
      await post({
        type: "x",
        auth: { type: "none" },
        probes: [{ id: "p", url: "https://x.example/", timeout: "2m" }]
      }).then(fieldsOf)
    ).toEqual(["body.definition.probes[0].timeout"])
  })

  it("rejects a hook with a syntax error", async () => {
    const reply = await post({ type: "x", auth: { type: "none" }, migrations: { up: { javascript: "migrate(cfg" } } })
    const body = expectError(reply, 400, "invalid_definition")
    expect(body.details?.map((detail) => detail.field)).toEqual(["body.definition.migrations.up.javascript"])
    expect(body.details?.[0]?.message).toMatch(/^SyntaxError: /)
  })

  it("rejects a step schema Ajv cannot compile", async () => {
    const reply = await post({
      type: "x",
      auth: { type: "none" },
      setup_flow: {
        configure: { steps: [{ id: "s", json_schema: { type: "object", properties: { a: { type: "strnig" } } } }] }
      }
    })
    expect(fieldsOf(reply)).toEqual(["body.definition.setup_flow.configure.steps[0].json_schema"])
  })

  it("validates new versions the same way and keeps the connector unchanged", async () => {
    const created = expectStatus<ConnectorBody>(await post({ type: `t${rand()}`, auth: { type: "none" } }), 201)
    const bad = await svc.call("POST", `/api/v1/connectors/${created.id}/versions`, {
      body: { definition: "type: x\nauth:\n  type: basic\n  realm: nope\n" }
    })
    expect(fieldsOf(bad)).toEqual(["body.definition.auth.realm"])
    const listed = expectStatus<{ items: ReadonlyArray<VersionBody> }>(
      await svc.call("GET", `/api/v1/connectors/${created.id}/versions`),
      200
    )
    expect(listed.items.map((item) => item.version)).toEqual([1])
    const good = expectStatus<VersionBody>(
      await svc.call("POST", `/api/v1/connectors/${created.id}/versions`, {
        body: { definition: "type: renamed\nauth:\n  type: basic\n" }
      }),
      201
    )
    expect(good).toMatchObject({ version: 2, state: "draft", definition: { type: "renamed", auth: { type: "basic" } } })
  })
})
