import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Option, Result } from "effect"
import * as NodePath from "node:path"
import { ConfigLocation, loadCliConfig, parseConfigText, resolvePath } from "./CliConfig.ts"

const full = `
admin_username: ops
admin_private_key_path: keys/admin.pem
admin_shared_key_path: ~/secret
server:
  api: https://api.example.com
  admin_api: https://admin.example.com
  auth: https://auth.example.com
  marketplace: https://market.example.com
  admin_ui: http://localhost:3000
signing_proxy:
  port:
    env_var: SVC_SIGNING_PROXY_PORT
    default: 8888
`

const failureMessage = (text: string) => {
  const result = parseConfigText(text, "/c/.svc.yaml")
  if (Result.isSuccess(result)) throw new Error("unexpected success")
  return result.failure.message
}

describe("parseConfigText", () => {
  it("decodes every spec 4.8 key", () => {
    const result = parseConfigText(full, "/c/.svc.yaml")
    assert.isTrue(Result.isSuccess(result))
    if (Result.isSuccess(result)) {
      assert.deepStrictEqual(result.success, {
        admin_username: "ops",
        admin_private_key_path: "keys/admin.pem",
        admin_shared_key_path: "~/secret",
        server: {
          api: "https://api.example.com",
          admin_api: "https://admin.example.com",
          auth: "https://auth.example.com",
          marketplace: "https://market.example.com",
          admin_ui: "http://localhost:3000"
        },
        signing_proxy: { port: { env_var: "SVC_SIGNING_PROXY_PORT", default: 8888 } }
      })
    }
  })

  it("treats an empty file as no settings", () => {
    assert.deepStrictEqual(parseConfigText("", "x"), Result.succeed({}))
    assert.deepStrictEqual(parseConfigText("# only a comment\n", "x"), Result.succeed({}))
  })

  it("names unknown keys, including nested ones", () => {
    assert.strictEqual(
      failureMessage("admin_usrname: ops\nserver:\n  apii: https://x\n"),
      'invalid config file "/c/.svc.yaml":\n  admin_usrname: unknown key\n  server.apii: unknown key'
    )
  })

  it("names wrong-typed keys", () => {
    assert.strictEqual(
      failureMessage('admin_username: 5\nserver:\n  api: not a url\nsigning_proxy:\n  port:\n    default: "8888"\n'),
      'invalid config file "/c/.svc.yaml":\n  admin_username: Expected string\n  server.api: Expected an absolute URL\n' +
        "  signing_proxy.port.default: Expected number"
    )
    assert.include(
      failureMessage("signing_proxy:\n  port:\n    default: 70000\n"),
      "signing_proxy.port.default: Expected a value between 1 and 65535"
    )
    assert.include(failureMessage("- a\n- b\n"), "Expected object")
  })

  it("reports YAML syntax errors", () => {
    assert.include(failureMessage("server: [unclosed\n"), 'invalid config file "/c/.svc.yaml":')
  })
})

describe("resolvePath", () => {
  it("expands ~/ and resolves relative paths against the base directory", () => {
    assert.strictEqual(resolvePath("~/k.pem", "/etc", "/home/u"), "/home/u/k.pem")
    assert.strictEqual(resolvePath("k.pem", "/etc/svc", "/home/u"), "/etc/svc/k.pem")
    assert.strictEqual(resolvePath("/abs/k.pem", "/etc/svc", "/home/u"), "/abs/k.pem")
  })
})

describe("loadCliConfig", () => {
  const inTempHome = <A, E>(f: (home: string) => Effect.Effect<A, E, FileSystem.FileSystem | ConfigLocation>) =>
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const home = yield* fs.makeTempDirectoryScoped()
      return yield* f(home).pipe(Effect.provide(ConfigLocation.layer(home)))
    }).pipe(Effect.provide(NodeServices.layer))

  it.effect("a missing ~/.svc.yaml means no settings", () =>
    inTempHome(() =>
      Effect.gen(function* () {
        const loaded = yield* loadCliConfig(Option.none())
        assert.deepStrictEqual(loaded, { source: undefined, config: {} })
      })
    )
  )

  it.effect("notes the development key of an embedded svc in the working directory", () =>
    inTempHome((home) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        yield* fs.makeDirectory(NodePath.join(home, ".svc", "dev-keys"), { recursive: true })
        yield* fs.writeFileString(NodePath.join(home, ".svc", "dev-keys", "jwt-private.pem"), "pem")
        const loaded = yield* loadCliConfig(Option.none())
        assert.deepStrictEqual(loaded, {
          source: undefined,
          config: {},
          devKeyPath: NodePath.join(home, ".svc", "dev-keys", "jwt-private.pem")
        })
      })
    )
  )

  it.effect("reads ~/.svc.yaml and resolves key paths against its directory", () =>
    inTempHome((home) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        yield* fs.writeFileString(NodePath.join(home, ".svc.yaml"), full)
        const loaded = yield* loadCliConfig(Option.none())
        assert.strictEqual(loaded.source, NodePath.join(home, ".svc.yaml"))
        assert.strictEqual(loaded.config.admin_private_key_path, NodePath.join(home, "keys/admin.pem"))
        assert.strictEqual(loaded.config.admin_shared_key_path, NodePath.join(home, "secret"))
        assert.strictEqual(loaded.config.admin_username, "ops")
      })
    )
  )

  it.effect("--config reads the given file instead", () =>
    inTempHome((home) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        yield* fs.makeDirectory(NodePath.join(home, "etc"))
        const path = NodePath.join(home, "etc", "alt.yaml")
        yield* fs.writeFileString(path, "admin_shared_key_path: s.bin\n")
        yield* fs.writeFileString(NodePath.join(home, ".svc.yaml"), "admin_username: ignored\n")
        const loaded = yield* loadCliConfig(Option.some(path))
        assert.deepStrictEqual(loaded, {
          source: path,
          config: { admin_shared_key_path: NodePath.join(home, "etc", "s.bin") }
        })
      })
    )
  )

  it.effect("a missing --config file is an error", () =>
    inTempHome((home) =>
      Effect.gen(function* () {
        const path = NodePath.join(home, "nope.yaml")
        const error = yield* Effect.flip(loadCliConfig(Option.some(path)))
        assert.strictEqual(error.message, `cannot read config file "${path}": file not found`)
      })
    )
  )

  it.effect("an invalid ~/.svc.yaml is an error", () =>
    inTempHome((home) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        yield* fs.writeFileString(NodePath.join(home, ".svc.yaml"), "bogus: true\n")
        const error = yield* Effect.flip(loadCliConfig(Option.none()))
        assert.strictEqual(
          error.message,
          `invalid config file "${NodePath.join(home, ".svc.yaml")}":\n  bogus: unknown key`
        )
      })
    )
  )
})
