import { type ConnectorDefinition, decodeConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { migrationPath } from "@svc/domain/Migration"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { applyHookResult, decide, initialHookState, refreshInputsChanged } from "./MigrationPlan.ts"

const definition = (input: Record<string, unknown>): ConnectorDefinition =>
  Effect.runSync(decodeConnectorDefinition({ type: "demo", auth: { type: "none" }, ...input }))

const form = (properties: Record<string, unknown>, required: ReadonlyArray<string> = []) => ({
  type: "object",
  properties,
  required,
  additionalProperties: false
})

const flow = (configure: Record<string, unknown>, required: ReadonlyArray<string> = [], preconnect?: object) => ({
  setup_flow: {
    ...(preconnect === undefined ? {} : { preconnect: { steps: [{ id: "pre", json_schema: preconnect }] } }),
    configure: { steps: [{ id: "basics", json_schema: form(configure, required) }] }
  }
})

const oauth = (extra: Record<string, unknown> = {}) => ({
  auth: {
    type: "oauth2",
    grant_type: "client_credentials",
    token_endpoint: "https://auth.example.com/token",
    scopes: [{ name: "read", required: true }],
    ...extra
  }
})

const configured = { state: "configured" as const, setupStepId: null, grantedScopes: null }

describe("migrationPath", () => {
  it("runs up hooks of the versions above the source, down hooks from the source downwards", () => {
    expect(migrationPath(1, 3)).toEqual([
      { version: 2, direction: "up" },
      { version: 3, direction: "up" }
    ])
    expect(migrationPath(3, 1)).toEqual([
      { version: 3, direction: "down" },
      { version: 2, direction: "down" }
    ])
    expect(migrationPath(2, 2)).toEqual([])
  })
})

describe("applyHookResult", () => {
  it("merges set and removes unset per section; the last word on a notification key wins", () => {
    const start = initialHookState({ host: "h", legacy: 1 }, { a: "1" }, { n: "x" })
    const first = applyHookResult(start, {
      config: { set: { base_url: "https://h" }, unset: ["legacy"] },
      labels: { set: { b: "2" } },
      notifications: { set: [{ key: "k", level: "info", title: "T" }] }
    })
    const second = applyHookResult(first, {
      labels: { unset: ["a"] },
      annotations: { set: { m: "y" } },
      notifications: { unset: [{ key: "k" }] }
    })
    expect(second.cfg).toEqual({ host: "h", base_url: "https://h" })
    expect(second.labels).toEqual({ b: "2" })
    expect(second.annotations).toEqual({ n: "x", m: "y" })
    expect(second.notifications.get("k")).toBe("unset")
    // The input state is never changed.
    expect(start.cfg).toEqual({ host: "h", legacy: 1 })
  })
})

describe("decide (spec 4.3 rule 4)", () => {
  const state = (cfg: Record<string, unknown>) => initialHookState(cfg, {}, {})

  it("fills defaults of target-only fields, not of fields the source declared too", () => {
    const source = definition(flow({ host: { type: "string" }, port: { type: "integer", default: 443 } }))
    const target = definition(
      flow({
        host: { type: "string" },
        port: { type: "integer", default: 443 },
        region: { type: "string", default: "eu" }
      })
    )
    const decided = decide(source, target, configured, state({ host: "h" }))
    expect(decided).toMatchObject({ _tag: "Decided", decision: { configuration: { host: "h", region: "eu" } } })
  })

  it("a missing required configure field names its step and asks for the setup notice", () => {
    const source = definition(flow({ host: { type: "string" } }))
    const target = definition(flow({ host: { type: "string" }, ws: { type: "string" } }, ["ws"]))
    const decided = decide(source, target, configured, state({ host: "h" }))
    expect(decided).toMatchObject({
      _tag: "Decided",
      decision: { setupStepId: "basics", setupNotice: true, reauth: false }
    })
  })

  it("a missing required preconnect field: re-authentication for a configured connection, setup for one in setup", () => {
    const source = definition(flow({ host: { type: "string" } }))
    const target = definition(flow({ host: { type: "string" } }, [], form({ tenant: { type: "string" } }, ["tenant"])))
    expect(decide(source, target, configured, state({ host: "h" }))).toMatchObject({
      decision: { reauth: true, reauthReasons: ["required_preconnect_field_added"], setupNotice: false }
    })
    expect(
      decide(source, target, { state: "setup", setupStepId: null, grantedScopes: null }, state({ host: "h" }))
    ).toMatchObject({ decision: { reauth: false, setupStepId: "pre", setupNotice: true } })
  })

  it("a newly required OAuth scope not granted asks for re-authentication and no refresh", () => {
    const source = definition({ ...flow({}), ...oauth() })
    const target = definition({
      ...flow({}),
      ...oauth({
        scopes: [
          { name: "read", required: true },
          { name: "write", required: true }
        ]
      })
    })
    expect(decide(source, target, configured, state({}))).toMatchObject({
      decision: { reauth: true, reauthReasons: ["required_scope_added"], refresh: false }
    })
    // Already granted by the provider: nothing to do.
    expect(decide(source, target, { ...configured, grantedScopes: ["read", "write"] }, state({}))).toMatchObject({
      decision: { reauth: false }
    })
  })

  it("a changed token endpoint or client asks for a refresh; other changes do not", () => {
    const source = definition({ ...flow({}), ...oauth() })
    const moved = definition({ ...flow({}), ...oauth({ token_endpoint: "https://auth2.example.com/token" }) })
    expect(refreshInputsChanged(source, moved)).toBe(true)
    expect(decide(source, moved, configured, state({}))).toMatchObject({ decision: { refresh: true } })
    const same = definition({ ...flow({}), ...oauth(), description: "changed text" })
    expect(refreshInputsChanged(source, same)).toBe(false)
    expect(refreshInputsChanged(definition(flow({})), definition(flow({})))).toBe(false)
  })

  it("undeclared keys, invalid values and invalid labels fail the migration, naming fields, never values", () => {
    const source = definition(flow({ host: { type: "string" } }))
    const target = definition(flow({ port: { type: "integer" } }))
    const decided = decide(source, target, configured, {
      ...initialHookState({ host: "secret-value", port: "not-a-number" }, {}, {}),
      labels: { "bad key!": "v" }
    })
    expect(decided._tag).toBe("Invalid")
    const text = JSON.stringify(decided)
    expect(text).toContain("configuration.host")
    expect(text).toContain("configuration.port")
    expect(text).toContain("labels.bad key!")
    expect(text).not.toContain("secret-value")
    expect(text).not.toContain("not-a-number")
  })
})

describe("keys that reach the prototype (SECURITY.md)", () => {
  it("a config.set.__proto__ that got past decoding sets nothing, neither on the state nor through it", () => {
    // JSON.parse makes `__proto__` an own key, as the sandbox's output arrives.
    const result = JSON.parse('{"config":{"set":{"__proto__":{"token":"forged"}}}}') as Parameters<
      typeof applyHookResult
    >[1]
    const state = applyHookResult(initialHookState({ host: "h" }, {}, {}), result)
    expect(Object.getPrototypeOf(state.cfg)).toBe(Object.prototype)
    expect("token" in state.cfg).toBe(false)
    const source = definition(flow({ host: { type: "string" } }))
    const target = definition(flow({ host: { type: "string" }, token: { type: "string" } }, ["token"]))
    const comparison = decide(source, target, configured, state)
    // The required field the hook tried to supply through the prototype is still missing.
    expect(comparison).toMatchObject({
      _tag: "Decided",
      decision: { configuration: { host: "h" }, setupStepId: "basics" }
    })
  })

  it("a migrated configuration never reads a declared key through the prototype", () => {
    const cfg = Object.create({ token: "inherited" }) as Record<string, unknown>
    cfg.host = "h"
    const target = definition(flow({ host: { type: "string" }, token: { type: "string" } }, ["token"]))
    const comparison = decide(definition(flow({ host: { type: "string" } })), target, configured, {
      ...initialHookState({}, {}, {}),
      cfg
    })
    expect(comparison).toMatchObject({
      _tag: "Decided",
      decision: { configuration: { host: "h" }, setupStepId: "basics" }
    })
  })
})
