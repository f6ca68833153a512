/** The OAuth2 client of an authorization-code definition: id from the definition, secret from configuration. */
import { assert, describe, it } from "@effect/vitest"
import { OAuth2AuthorizationCodeAuth } from "@svc/domain/ConnectorAuth"
import { ConfigProvider, Effect, Layer, Redacted, Schema } from "effect"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { loadConfig } from "../config/ConfigLoader.ts"
import { type ClientSecretSource, SvcConfig } from "../config/SvcConfig.ts"
import { OAuthClient } from "./OAuthClient.ts"

const auth = (fields: Record<string, unknown>) =>
  Schema.decodeUnknownSync(OAuth2AuthorizationCodeAuth)({
    type: "oauth2",
    grant_type: "authorization_code",
    authorization_endpoint: "https://provider.example/authorize",
    token_endpoint: "https://provider.example/token",
    ...fields
  })

/** Resolves `fields`' client with `clients` configured and `env` as the environment. */
const resolve = (
  fields: Record<string, unknown>,
  clients: ReadonlyArray<readonly [string, ClientSecretSource]>,
  env: Record<string, string> = {}
) =>
  Effect.gen(function* () {
    const dir = yield* Effect.acquireRelease(
      Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-oauthclient-"))),
      (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
    )
    const loaded = yield* Effect.orDie(loadConfig({ cwd: dir, env: {} }))
    const config = Layer.succeed(SvcConfig, { ...loaded, oauth2: { ...loaded.oauth2, clients: new Map(clients) } })
    return yield* Effect.flatMap(OAuthClient, (c) => c.resolve(auth(fields))).pipe(
      Effect.result,
      Effect.provide(OAuthClient.layerNoDeps.pipe(Layer.provide(config))),
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))
    )
  })

describe("OAuthClient", () => {
  it.live("reads the secret from a value, an environment variable or a file (trimmed)", () =>
    Effect.gen(function* () {
      const file = path.join(os.tmpdir(), `svc-oauthclient-${process.pid}.secret`)
      yield* Effect.acquireRelease(
        Effect.promise(() => fs.writeFile(file, "from-file\n")),
        () => Effect.promise(() => fs.rm(file, { force: true }))
      )
      const value = yield* resolve({ client_id: "a" }, [["a", { source: "value", value: Redacted.make("from-value") }]])
      const env = yield* resolve({ client_id: "a" }, [["a", { source: "env", name: "A_SECRET" }]], {
        A_SECRET: "from-env"
      })
      const fromFile = yield* resolve({ client_id: "a" }, [["a", { source: "file", path: file }]])
      assert.deepStrictEqual(
        [value, env, fromFile].map((r) => (r._tag === "Success" ? r.success : r.failure.problem)),
        [
          { client_id: "a", client_secret: "from-value" },
          { client_id: "a", client_secret: "from-env" },
          { client_id: "a", client_secret: "from-file" }
        ]
      )
    })
  )

  it.live("a public client needs no secret; missing pieces are typed failures that name no secret", () =>
    Effect.gen(function* () {
      const configured = [["a", { source: "value", value: Redacted.make("s3cret-value") }]] as const
      const none = yield* resolve({ client_id: "pub", client_auth: "none" }, [])
      assert.deepStrictEqual(none._tag === "Success" ? none.success : undefined, { client_id: "pub" })
      const failures = [
        yield* resolve({}, configured),
        yield* resolve({ client_id: "b" }, configured),
        yield* resolve({ client_id: "a" }, [["a", { source: "env", name: "UNSET_SECRET" }]]),
        yield* resolve({ client_id: "a" }, [["a", { source: "file", path: "/nonexistent/svc/secret" }]])
      ]
      assert.deepStrictEqual(
        failures.map((r) => (r._tag === "Failure" ? r.failure.problem : "resolved")),
        ["no_client_id", "no_client_secret", "secret_unreadable", "secret_unreadable"]
      )
      for (const r of failures) if (r._tag === "Failure") assert.notInclude(r.failure.message, "s3cret")
    })
  )
})
