import { assert, describe, it } from "@effect/vitest"
import { Option, Result } from "effect"
import type { LoadedConfig } from "./CliConfig.ts"
import { resolveSignPlan, signJwtFlagErrors } from "./SignPlan.ts"
import type { SignJwtFlags } from "./SignPlan.ts"

const flags = (overrides: Partial<SignJwtFlags>): SignJwtFlags => ({
  admin: false,
  actorId: Option.none(),
  apis: Option.none(),
  expiresIn: Option.none(),
  noExpiry: false,
  permissionsFile: Option.none(),
  dashboardPreset: Option.none(),
  privateKeyPath: Option.none(),
  secretKeyPath: Option.none(),
  ...overrides
})

const noConfig: LoadedConfig = { source: undefined, config: {} }
const withKey = (config: LoadedConfig["config"]): LoadedConfig => ({ source: "/home/u/.svc.yaml", config })
const secret = { secretKeyPath: Option.some("/keys/secret") }

const plan = (f: SignJwtFlags, loaded: LoadedConfig = noConfig) => {
  const result = resolveSignPlan(f, loaded)
  if (Result.isFailure(result)) throw new Error(`unexpected failure: ${result.failure.message}`)
  return result.success
}
const failure = (f: SignJwtFlags, loaded: LoadedConfig = noConfig) => {
  const result = resolveSignPlan(f, loaded)
  if (Result.isSuccess(result)) throw new Error("unexpected success")
  return result.failure.message
}

describe("signJwtFlagErrors", () => {
  it("accepts a minimal valid combination", () => {
    assert.deepStrictEqual(signJwtFlagErrors(flags({ admin: true })), [])
    assert.deepStrictEqual(signJwtFlagErrors(flags({ actorId: Option.some("a"), noExpiry: true })), [])
  })

  it.each([
    [{ admin: true, actorId: Option.some("a") }, "--admin and --actorId are mutually exclusive"],
    [{}, "one of --admin or --actorId <externalId> is required"],
    [{ actorId: Option.some(" ") }, "--actorId must not be empty"],
    [
      { admin: true, noExpiry: true, expiresIn: Option.some("1h") },
      "--expires-in and --no-expiry are mutually exclusive"
    ],
    [
      { admin: true, permissionsFile: Option.some("p.yaml"), dashboardPreset: Option.some("logs" as const) },
      "--permissions-file and --dashboard-preset are mutually exclusive"
    ],
    [
      { admin: true, privateKeyPath: Option.some("k.pem"), secretKeyPath: Option.some("s") },
      "--privateKeyPath and --secretKeyPath are mutually exclusive"
    ]
  ])("rejects %j", (overrides, message) => {
    assert.deepStrictEqual(signJwtFlagErrors(flags(overrides)), [message])
  })

  it("reports malformed --expires-in and --apis values", () => {
    const errors = signJwtFlagErrors(flags({ admin: true, expiresIn: Option.some("1y"), apis: Option.some("api,x") }))
    assert.strictEqual(errors.length, 2)
    assert.include(errors[0], '--expires-in: invalid duration "1y"')
    assert.include(errors[1], '--apis: unknown service id "x"')
  })

  it("reports every problem at once", () => {
    const errors = signJwtFlagErrors(
      flags({
        admin: true,
        actorId: Option.some("a"),
        noExpiry: true,
        expiresIn: Option.some("1h"),
        privateKeyPath: Option.some("k"),
        secretKeyPath: Option.some("s")
      })
    )
    assert.strictEqual(errors.length, 3)
  })
})

describe("resolveSignPlan", () => {
  it('--admin signs for admin_username, default "admin"', () => {
    assert.strictEqual(plan(flags({ admin: true, ...secret })).subject, "admin")
    assert.strictEqual(plan(flags({ admin: true, ...secret }), withKey({ admin_username: "ops" })).subject, "ops")
    assert.strictEqual(
      plan(flags({ actorId: Option.some("user-7"), ...secret }), withKey({ admin_username: "ops" })).subject,
      "user-7"
    )
  })

  it("expiry: 1h by default, 90d with a preset, --expires-in wins, --no-expiry none", () => {
    assert.strictEqual(plan(flags({ admin: true, ...secret })).expiresInSeconds, 3_600)
    const preset = { dashboardPreset: Option.some("aggregate" as const) }
    assert.strictEqual(plan(flags({ admin: true, ...secret, ...preset })).expiresInSeconds, 7_776_000)
    assert.strictEqual(
      plan(flags({ admin: true, ...secret, ...preset, expiresIn: Option.some("1d12h") })).expiresInSeconds,
      129_600
    )
    assert.strictEqual(plan(flags({ admin: true, ...secret, ...preset, noExpiry: true })).expiresInSeconds, undefined)
    assert.strictEqual(plan(flags({ admin: true, ...secret, noExpiry: true })).expiresInSeconds, undefined)
  })

  it("apis and restrictions", () => {
    const p = plan(
      flags({ admin: true, ...secret, apis: Option.some("public,api"), permissionsFile: Option.some("p.yaml") })
    )
    assert.deepStrictEqual(p.apis, ["api", "public"])
    assert.deepStrictEqual(p.restrictions, { _tag: "File", path: "p.yaml" })
    const q = plan(flags({ admin: true, ...secret, dashboardPreset: Option.some("logs") }))
    assert.strictEqual(q.apis, undefined)
    assert.deepStrictEqual(q.restrictions, { _tag: "Preset", preset: "logs" })
  })

  it("key: flags first, then the config's private key (RS256) or shared key (HS256)", () => {
    assert.deepStrictEqual(plan(flags({ admin: true, privateKeyPath: Option.some("k.pem") })).key, {
      alg: "RS256",
      path: "k.pem"
    })
    assert.deepStrictEqual(
      plan(flags({ admin: true, ...secret }), withKey({ admin_private_key_path: "/c/k.pem" })).key,
      { alg: "HS256", path: "/keys/secret" }
    )
    assert.deepStrictEqual(plan(flags({ admin: true }), withKey({ admin_private_key_path: "/c/k.pem" })).key, {
      alg: "RS256",
      path: "/c/k.pem"
    })
    assert.deepStrictEqual(plan(flags({ admin: true }), withKey({ admin_shared_key_path: "/c/s" })).key, {
      alg: "HS256",
      path: "/c/s"
    })
    assert.deepStrictEqual(
      plan(
        flags({ admin: true, privateKeyPath: Option.some("k.pem") }),
        withKey({ admin_private_key_path: "/c/k.pem", admin_shared_key_path: "/c/s" })
      ).key,
      { alg: "RS256", path: "k.pem" }
    )
  })

  it("with no key flag or config key, uses the embedded default's development key", () => {
    const dev: LoadedConfig = { ...noConfig, devKeyPath: "/work/.svc/dev-keys/jwt-private.pem" }
    assert.deepStrictEqual(plan(flags({ admin: true }), dev).key, {
      alg: "RS256",
      path: "/work/.svc/dev-keys/jwt-private.pem"
    })
    assert.deepStrictEqual(
      plan(flags({ admin: true }), { ...withKey({ admin_shared_key_path: "/c/s" }), devKeyPath: "/d" }).key,
      {
        alg: "HS256",
        path: "/c/s"
      }
    )
  })

  it("fails without a key and when the config names both keys", () => {
    assert.include(
      failure(flags({ admin: true })),
      "no signing key: pass --privateKeyPath <pem> or --secretKeyPath <file>"
    )
    assert.include(
      failure(flags({ admin: true }), withKey({ admin_private_key_path: "/k", admin_shared_key_path: "/s" })),
      "sets both admin_private_key_path and admin_shared_key_path"
    )
  })

  it("fails on flag errors before looking at keys", () => {
    assert.strictEqual(
      failure(flags({ admin: true, actorId: Option.some("a") })),
      "--admin and --actorId are mutually exclusive"
    )
  })
})
