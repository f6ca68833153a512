import { assert, describe, it } from "@effect/vitest"
import { Option, Result } from "effect"
import { type ApiFlags, apiFlagErrors, defaultApiUrl, resolveApiTarget } from "./ApiClient.ts"
import type { LoadedConfig } from "./CliConfig.ts"

const flags = (overrides: Partial<ApiFlags> = {}): ApiFlags => ({
  apiUrl: Option.none(),
  actorId: Option.none(),
  privateKeyPath: Option.none(),
  secretKeyPath: Option.none(),
  ...overrides
})
const noConfig: LoadedConfig = { source: undefined, config: {} }
const config = (values: LoadedConfig["config"]): LoadedConfig => ({ source: "/home/u/.svc.yaml", config: values })
const devKey = "/work/.svc/dev-keys/jwt-private.pem"

const target = (f: ApiFlags, loaded: LoadedConfig) => {
  const result = resolveApiTarget(f, { ...loaded, devKeyPath: devKey })
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

describe("resolveApiTarget", () => {
  it("with no flags and no config uses the embedded default: 127.0.0.1:8081, admin, ./.svc/dev-keys", () => {
    assert.deepStrictEqual(target(flags(), noConfig), {
      apiUrl: defaultApiUrl,
      subject: "admin",
      key: { alg: "RS256", path: devKey }
    })
  })

  it("the config file wins over the embedded default", () => {
    const loaded = config({
      admin_username: "ops",
      admin_shared_key_path: "/keys/shared.key",
      server: { api: "https://api.example.com/" }
    })
    assert.deepStrictEqual(target(flags(), loaded), {
      apiUrl: "https://api.example.com",
      subject: "ops",
      key: { alg: "HS256", path: "/keys/shared.key" }
    })
  })

  it("flags win over the config file", () => {
    const loaded = config({ admin_username: "ops", admin_private_key_path: "/keys/a.pem", server: { api: "http://a" } })
    const resolved = target(
      flags({
        apiUrl: Option.some("http://b:9"),
        actorId: Option.some("me"),
        privateKeyPath: Option.some("/keys/b.pem")
      }),
      loaded
    )
    assert.deepStrictEqual(resolved, {
      apiUrl: "http://b:9",
      subject: "me",
      key: { alg: "RS256", path: "/keys/b.pem" }
    })
  })

  it("without any key names every way to give one", () => {
    const result = resolveApiTarget(flags(), noConfig)
    assert.isTrue(Result.isFailure(result))
    if (Result.isFailure(result)) {
      assert.include(result.failure.message, "--privateKeyPath")
      assert.include(result.failure.message, "admin_private_key_path")
      assert.include(result.failure.message, ".svc/dev-keys/jwt-private.pem")
    }
  })
})

describe("apiFlagErrors", () => {
  it("rejects a non-http URL, an empty actor and two keys", () => {
    assert.deepStrictEqual(apiFlagErrors(flags()), [])
    assert.deepStrictEqual(
      apiFlagErrors(
        flags({
          apiUrl: Option.some("ftp://x"),
          actorId: Option.some(" "),
          privateKeyPath: Option.some("a"),
          secretKeyPath: Option.some("b")
        })
      ),
      [
        '--apiUrl: expected an http or https URL (got "ftp://x")',
        "--actorId must not be empty",
        "--privateKeyPath and --secretKeyPath are mutually exclusive"
      ]
    )
  })
})
