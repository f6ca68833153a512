import { assert, describe, it } from "@effect/vitest"
import { Option, Result } from "effect"
import type { LoadedConfig } from "./CliConfig.ts"
import { forwardUrl, resolveProxyTarget, resolveSigningProxyPort } from "./SigningProxyPlan.ts"

const loaded = (config: LoadedConfig["config"] = {}): LoadedConfig => ({ source: "/h/.svc.yaml", config })
const noEnv = () => undefined

const port = (
  flags: { port?: number; clone?: number },
  config: LoadedConfig["config"] = {},
  env: (name: string) => string | undefined = noEnv
) => resolveSigningProxyPort({ port: Option.fromUndefinedOr(flags.port), clone: flags.clone ?? 0 }, loaded(config), env)

const target = (proxyTo: string, config: LoadedConfig["config"] = {}) => {
  const result = resolveProxyTarget(proxyTo, loaded(config))
  return Result.isSuccess(result)
    ? { name: result.success.name, base: result.success.base.href }
    : result.failure.message
}

describe("resolveSigningProxyPort (spec 4.8)", () => {
  it("--port, else the variable, else the configured default, else 8888; --clone adds 10 each", () => {
    assert.deepStrictEqual(port({ port: 0 }), Result.succeed({ port: 0, source: "--port" }))
    assert.deepStrictEqual(port({}), Result.succeed({ port: 8888, source: "default" }))
    assert.deepStrictEqual(port({ clone: 2 }), Result.succeed({ port: 8908, source: "default + 10×2 (--clone)" }))
    const config = { signing_proxy: { port: { env_var: "MY_PORT", default: 7000 } } }
    assert.deepStrictEqual(
      port({}, config),
      Result.succeed({ port: 7000, source: "config signing_proxy.port.default" })
    )
    const env = (name: string) => (name === "MY_PORT" ? "7100" : name === "SVC_SIGNING_PROXY_PORT" ? "1" : undefined)
    assert.deepStrictEqual(
      port({ clone: 1 }, config, env),
      Result.succeed({ port: 7110, source: "$MY_PORT + 10×1 (--clone)" })
    )
    assert.deepStrictEqual(port({}, {}, env), Result.succeed({ port: 1, source: "$SVC_SIGNING_PROXY_PORT" }))
    assert.deepStrictEqual(
      port({}, config, () => " "),
      Result.succeed({ port: 7000, source: "config signing_proxy.port.default" })
    )
  })

  it("a variable that is not a port, or a clone past 65535, fails naming it", () => {
    const bad = port({}, {}, () => "80a")
    assert.isTrue(Result.isFailure(bad) && bad.failure.message.includes('SVC_SIGNING_PROXY_PORT="80a" is not a port'))
    const high = port({ clone: 10 }, { signing_proxy: { port: { default: 65_500 } } })
    assert.isTrue(Result.isFailure(high) && high.failure.message.includes("above 65535"))
  })
})

describe("resolveProxyTarget", () => {
  it("service ids take the config's URL, else the embedded default; an absolute URL is itself", () => {
    assert.deepStrictEqual(target("api"), { name: "api", base: "http://127.0.0.1:8081/" })
    assert.deepStrictEqual(target("admin-api"), { name: "admin-api", base: "https://127.0.0.1:8082/" })
    assert.deepStrictEqual(target("public"), { name: "public", base: "http://127.0.0.1:8080/" })
    assert.deepStrictEqual(target("public", { server: { auth: "https://auth.example" } }), {
      name: "public",
      base: "https://auth.example/"
    })
    assert.deepStrictEqual(target("api", { server: { api: "https://api.example/svc" } }), {
      name: "api",
      base: "https://api.example/svc"
    })
    const withApiUrl = resolveProxyTarget("api", loaded({ server: { api: "https://c" } }), Option.some("http://f:1"))
    assert.strictEqual(Result.isSuccess(withApiUrl) ? withApiUrl.success.base.href : "", "http://f:1/")
    assert.deepStrictEqual(target("http://h.example:9/p/"), {
      name: "http://h.example:9",
      base: "http://h.example:9/p/"
    })
  })

  it("anything else is a one-line error", () => {
    assert.match(String(target("apii")), /^--proxyTo: expected api, admin-api, public or an absolute http\(s\) URL/)
    assert.match(String(target("ftp://h")), /expected an http or https URL/)
    assert.match(String(target("https://u:p@h")), /must not contain credentials/)
  })
})

describe("forwardUrl", () => {
  it("appends the request target to the base path, query kept", () => {
    assert.strictEqual(forwardUrl(new URL("https://h/p/"), "/a/b?x=1&y").href, "https://h/p/a/b?x=1&y")
    assert.strictEqual(forwardUrl(new URL("https://h"), "/").href, "https://h/")
    assert.strictEqual(forwardUrl(new URL("https://h/base"), "/a%20b").href, "https://h/base/a%20b")
  })
})
