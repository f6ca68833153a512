import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { buildClaims, dashboardPresetPermissions, parseApis, parsePermissionsDocument } from "./Claims.ts"

const base = { subject: "user-1", issuedAt: 1_700_000_000, jti: "jti-1" } as const

const ok = <A, E extends { readonly message: string }>(result: Result.Result<A, E>): A => {
  if (Result.isFailure(result)) throw new Error(`unexpected failure: ${result.failure.message}`)
  return result.success
}
const err = <A, E>(result: Result.Result<A, E>): E => {
  if (Result.isSuccess(result)) throw new Error(`unexpected success: ${JSON.stringify(result.success)}`)
  return result.failure
}

describe("buildClaims", () => {
  it("admin-style token: sub, iat, jti and exp only (no aud, no permissions)", () => {
    const claims = buildClaims({
      ...base,
      subject: "admin",
      expiresInSeconds: 3_600,
      apis: undefined,
      permissions: undefined
    })
    assert.deepStrictEqual(claims, { sub: "admin", iat: 1_700_000_000, jti: "jti-1", exp: 1_700_003_600 })
  })

  it("no expiry omits exp", () => {
    const claims = buildClaims({ ...base, expiresInSeconds: undefined, apis: undefined, permissions: undefined })
    assert.deepStrictEqual(claims, { sub: "user-1", iat: 1_700_000_000, jti: "jti-1" })
    assert.isFalse("exp" in claims)
  })

  it("a service allowlist becomes aud", () => {
    const claims = buildClaims({ ...base, expiresInSeconds: 60, apis: ["api", "worker"], permissions: undefined })
    assert.deepStrictEqual(claims.aud, ["api", "worker"])
    assert.strictEqual(claims.exp, 1_700_000_060)
  })

  it("permissions become the permissions claim", () => {
    const permissions = dashboardPresetPermissions("aggregate")
    const claims = buildClaims({ ...base, expiresInSeconds: undefined, apis: undefined, permissions })
    assert.deepStrictEqual(claims.permissions, permissions)
  })
})

describe("parseApis", () => {
  it("keeps the named services in canonical order without duplicates", () => {
    assert.deepStrictEqual(ok(parseApis("worker, api,api")), ["api", "worker"])
    assert.deepStrictEqual(ok(parseApis("admin-api")), ["admin-api"])
  })

  it("all four services means no aud", () => {
    assert.strictEqual(ok(parseApis("public,worker,api,admin-api")), undefined)
  })

  it("rejects unknown and empty ids naming them and the valid ones", () => {
    const error = err(parseApis("api,admin,"))
    assert.strictEqual(
      error.message,
      '--apis: unknown service id "admin", (empty); valid ids are api, admin-api, public, worker'
    )
  })
})

describe("dashboardPresetPermissions", () => {
  it("aggregate: app-metrics query/schema and list on the resource lists in root.**", () => {
    assert.deepStrictEqual(dashboardPresetPermissions("aggregate"), [
      { namespace: "root.**", resources: ["app-metrics"], verbs: ["query", "schema"] },
      {
        namespace: "root.**",
        resources: ["namespaces", "connectors", "connections", "actors", "rate_limits"],
        verbs: ["list"]
      }
    ])
  })

  it("logs: aggregate plus request-events:list", () => {
    assert.deepStrictEqual(dashboardPresetPermissions("logs"), [
      ...dashboardPresetPermissions("aggregate"),
      { namespace: "root.**", resources: ["request-events"], verbs: ["list"] }
    ])
  })
})

describe("parsePermissionsDocument", () => {
  const expected = [
    { namespace: "{{external_id}}", resources: ["connections"], verbs: ["get", "proxy"], resourceIds: ["cxn_1"] },
    { namespace: "root.acme.**", resources: ["*"], verbs: ["list"] }
  ]

  it("reads a YAML array", () => {
    const yaml = [
      '- namespace: "{{external_id}}"',
      "  resources: [connections]",
      "  verbs: [get, proxy]",
      "  resourceIds: [cxn_1]",
      "- namespace: root.acme.**",
      '  resources: ["*"]',
      "  verbs: [list]"
    ].join("\n")
    assert.deepStrictEqual(ok(parsePermissionsDocument(yaml, "perms.yaml")), expected)
  })

  it("reads a YAML object with a permissions array", () => {
    const yaml = `permissions:\n${expected.map((p) => `  - ${JSON.stringify(p)}`).join("\n")}\n`
    assert.deepStrictEqual(ok(parsePermissionsDocument(yaml, "perms.yml")), expected)
  })

  it("reads a JSON array and a JSON object", () => {
    assert.deepStrictEqual(ok(parsePermissionsDocument(JSON.stringify(expected), "perms.json")), expected)
    assert.deepStrictEqual(
      ok(parsePermissionsDocument(JSON.stringify({ permissions: expected }, null, "\t"), "perms.JSON")),
      expected
    )
  })

  it("rejects unknown keys, wrong types and missing keys with their location", () => {
    const json = JSON.stringify([{ namespace: "root", resources: "connections", verb: ["get"] }])
    const error = err(parsePermissionsDocument(json, "p.json"))
    assert.strictEqual(
      error.message,
      'invalid permissions file "p.json":\n  [0].verb: unknown key\n  [0].resources: Expected array\n  [0].verbs: Missing key'
    )
  })

  it("rejects an unknown top-level key in the object form", () => {
    const error = err(parsePermissionsDocument("permissions: []\nextra: 1\n", "p.yaml"))
    assert.include(error.message, "extra: unknown key")
  })

  it("rejects scalars, empty lists and malformed text", () => {
    assert.include(err(parsePermissionsDocument("42", "p.yaml")).message, "expected an array of permissions")
    assert.include(err(parsePermissionsDocument("[]", "p.yaml")).message, "the permissions list is empty")
    assert.include(
      err(parsePermissionsDocument('{"permissions": [', "p.json")).message,
      'invalid permissions file "p.json"'
    )
    assert.include(err(parsePermissionsDocument("a: [1, 2", "p.yaml")).message, 'invalid permissions file "p.yaml"')
  })
})
