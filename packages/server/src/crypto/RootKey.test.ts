import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { RootKeySource } from "../config/SvcConfig.ts"
import { decodeRootKey, loadRootKey } from "./RootKey.ts"

const withDir = <A, E>(f: (dir: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-rootkey-"))),
    f,
    (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
  )

const key = randomBytes(32)
const encoded = key.toString("base64")

const load = (source: RootKeySource, env: Record<string, string> = {}) =>
  loadRootKey(source).pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })))

const failure = (source: RootKeySource, env: Record<string, string> = {}) =>
  Effect.map(Effect.flip(load(source, env)), (error) => error.message)

describe("RootKey", () => {
  it("decodes base64 (or base64url) of exactly 32 bytes, ignoring surrounding whitespace", () => {
    assert.deepStrictEqual(decodeRootKey(`${encoded}\n`), { key: new Uint8Array(key) })
    assert.deepStrictEqual(decodeRootKey(key.toString("base64url")), { key: new Uint8Array(key) })
    assert.deepStrictEqual(decodeRootKey(""), { problem: "it is empty" })
    assert.deepStrictEqual(decodeRootKey("not base64!"), { problem: "it is not base64" })
    assert.deepStrictEqual(decodeRootKey(randomBytes(16).toString("base64")), {
      problem: "it decodes to 16 bytes; 32 are required (e.g. openssl rand -base64 32)"
    })
  })

  it.effect("loads a value, an environment variable or a file", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* load({ source: "value", value: Redacted.make(encoded) }), new Uint8Array(key))
        assert.deepStrictEqual(
          yield* load({ source: "env", name: "ROOT_KEY" }, { ROOT_KEY: encoded }),
          new Uint8Array(key)
        )
        const file = path.join(dir, "root.key")
        yield* Effect.promise(() => fs.writeFile(file, `${encoded}\n`, { mode: 0o600 }))
        assert.deepStrictEqual(yield* load({ source: "file", path: file }), new Uint8Array(key))
      })
    )
  )

  it.effect("names the source of an unusable key, never the key", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const short = randomBytes(8).toString("base64")
        assert.strictEqual(
          yield* failure({ source: "env", name: "ROOT_KEY" }),
          "cannot use the encryption root key from the environment variable ROOT_KEY (encryption.root_key.env): it is not set"
        )
        const missing = path.join(dir, "missing.key")
        assert.strictEqual(
          yield* failure({ source: "file", path: missing }),
          `cannot use the encryption root key from the file ${missing} (encryption.root_key.path): cannot read it (ENOENT)`
        )
        const valueProblem = yield* failure({ source: "value", value: Redacted.make(short) })
        assert.strictEqual(
          valueProblem,
          "cannot use the encryption root key from encryption.root_key.value: it decodes to 8 bytes; 32 are required (e.g. openssl rand -base64 32)"
        )
        assert.notInclude(valueProblem, short)
        assert.include(yield* failure({ source: "env", name: "ROOT_KEY" }, { ROOT_KEY: "%%%" }), "it is not base64")
      })
    )
  )

  it.effect("generates the embedded key once, owner-only, and keeps it", () =>
    withDir((dir) =>
      Effect.gen(function* () {
        const file = path.join(dir, "data", "root.key")
        const first = yield* load({ source: "generated", path: file })
        assert.strictEqual(first.length, 32)
        const stat = yield* Effect.promise(() => fs.stat(file))
        assert.strictEqual(stat.mode & 0o777, 0o600)
        assert.deepStrictEqual(yield* load({ source: "generated", path: file }), first)
      })
    )
  )
})
