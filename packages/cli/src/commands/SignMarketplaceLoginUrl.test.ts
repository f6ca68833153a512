/**
 * `cli sign-marketplace-login-url` run in process: the printed URL, its token verified with the
 * test keys, configuration fallbacks and failures on stderr only.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer } from "effect"
import { CliError } from "effect/cli"
import { TestClock, TestConsole } from "effect/testing"
import { importSPKI, jwtVerify } from "jose"
import type { CryptoKey } from "jose"
import { generateKeyPairSync } from "node:crypto"
import * as NodePath from "node:path"
import { runCli } from "../Cli.ts"
import { ConfigLocation } from "../CliConfig.ts"
import { LoginNonce } from "../MarketplaceLogin.ts"
import { TokenId } from "../TokenId.ts"

const { privateKey, publicKey } = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  publicKeyEncoding: { type: "spki", format: "pem" },
  privateKeyEncoding: { type: "pkcs8", format: "pem" }
})
const secret = new TextEncoder().encode("0123456789abcdef0123456789abcdef-market\n")
const now = 1_700_000_000_000

interface Files {
  readonly home: string
  readonly privatePath: string
  readonly secretPath: string
}

/** Runs `f` with a temporary home holding the keys, fixed jti and nonce, a test console and real files. */
const withFiles = <A, E, R>(f: (files: Files) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const home = yield* fs.makeTempDirectoryScoped()
    const files: Files = {
      home,
      privatePath: NodePath.join(home, "admin.pem"),
      secretPath: NodePath.join(home, "shared.key")
    }
    yield* fs.writeFileString(files.privatePath, privateKey)
    yield* fs.writeFile(files.secretPath, secret)
    yield* TestClock.setTime(now)
    return yield* f(files).pipe(Effect.provide(ConfigLocation.layer(home)))
  }).pipe(
    Effect.provideService(TokenId, { next: Effect.succeed("jti-fixed") }),
    Effect.provideService(LoginNonce, { next: Effect.succeed("nonce-fixed") }),
    Effect.provide(Layer.mergeAll(NodeServices.layer, TestConsole.layer))
  )

/** The one line printed on stdout, parsed as a URL. */
const printedUrl = Effect.gen(function* () {
  const lines = yield* TestConsole.logLines
  assert.strictEqual(lines.length, 1)
  return new URL(String(lines[0]))
})

const verify = (url: URL, key: CryptoKey | Uint8Array, alg: "RS256" | "HS256") =>
  Effect.promise(() =>
    jwtVerify(url.searchParams.get("token") ?? "", key, { algorithms: [alg], currentDate: new Date(now) })
  )

describe("cli sign-marketplace-login-url (in process)", () => {
  it.effect("HS256 with flags: the URL, return_to and the exact claims", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        yield* runCli([
          "sign-marketplace-login-url",
          "--actorId",
          "user-42",
          "--returnTo",
          "https://app.example/integrations?tab=1",
          "--expires-in",
          "2m",
          "--marketplaceUrl",
          "https://public.example/",
          "--secretKeyPath",
          files.secretPath
        ])
        const url = yield* printedUrl
        assert.strictEqual(`${url.origin}${url.pathname}`, "https://public.example/marketplace/login")
        assert.deepStrictEqual([...url.searchParams.keys()], ["token", "return_to"])
        assert.strictEqual(url.searchParams.get("return_to"), "https://app.example/integrations?tab=1")
        const verified = yield* verify(url, secret, "HS256")
        assert.deepStrictEqual(verified.protectedHeader, { alg: "HS256", typ: "JWT" })
        assert.deepStrictEqual(verified.payload, {
          sub: "user-42",
          iat: 1_700_000_000,
          jti: "jti-fixed",
          exp: 1_700_000_120,
          aud: ["public"],
          nonce: "nonce-fixed"
        })
        assert.deepStrictEqual(yield* TestConsole.errorLines, [])
      })
    )
  )

  it.effect("RS256 from the config: admin_username, server.marketplace, 5 minutes, no return_to", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        yield* fs.writeFileString(
          NodePath.join(files.home, ".svc.yaml"),
          "admin_username: root-admin\nadmin_private_key_path: admin.pem\n" +
            "server:\n  marketplace: http://localhost:9090/svc\n"
        )
        yield* runCli(["sign-marketplace-login-url"])
        const url = yield* printedUrl
        assert.strictEqual(`${url.origin}${url.pathname}`, "http://localhost:9090/svc/marketplace/login")
        assert.deepStrictEqual([...url.searchParams.keys()], ["token"])
        const key = yield* Effect.promise(() => importSPKI(publicKey, "RS256"))
        const { payload } = yield* verify(url, key, "RS256")
        assert.strictEqual(payload.sub, "root-admin")
        assert.deepStrictEqual(payload.aud, ["public"])
        assert.strictEqual((payload.exp ?? 0) - (payload.iat ?? 0), 300)
        assert.strictEqual(payload.nonce, "nonce-fixed")
      })
    )
  )

  it.effect("defaults to http://127.0.0.1:8080 without flag or config", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        yield* runCli(["sign-marketplace-login-url", "--secretKeyPath", files.secretPath])
        const url = yield* printedUrl
        assert.strictEqual(`${url.origin}${url.pathname}`, "http://127.0.0.1:8080/marketplace/login")
        assert.strictEqual((yield* verify(url, secret, "HS256")).payload.sub, "admin")
      })
    )
  )

  it.effect("malformed flags are usage errors on stderr only", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(
          runCli([
            "sign-marketplace-login-url",
            "--marketplaceUrl",
            "ftp://public.example",
            "--returnTo",
            "//evil.example",
            "--secretKeyPath",
            files.secretPath
          ])
        )
        assert.isTrue(CliError.isCliError(error) && error._tag === "ShowHelp")
        assert.deepStrictEqual(yield* TestConsole.logLines, [])
        const stderr = (yield* TestConsole.errorLines).join("\n")
        assert.include(stderr, '--marketplaceUrl: expected an http or https URL (got "ftp://public.example")')
        assert.include(stderr, '--returnTo: expected an absolute http(s) URL or a path starting with "/"')
      })
    )
  )

  it.effect("a bad config URL or a missing key file fails with the reason, nothing on stdout", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        const config = NodePath.join(files.home, "bad.yaml")
        yield* fs.writeFileString(config, "server:\n  marketplace: ftp://public.example\n")
        const badConfig = yield* Effect.flip(
          runCli(["sign-marketplace-login-url", "--config", config, "--secretKeyPath", files.secretPath])
        )
        assert.strictEqual(badConfig._tag, "CliFailure")
        assert.strictEqual(
          badConfig.message,
          `config "${config}" server.marketplace: expected an http or https URL (got "ftp://public.example")`
        )
        const missing = yield* Effect.flip(
          runCli(["sign-marketplace-login-url", "--secretKeyPath", NodePath.join(files.home, "absent.key")])
        )
        assert.strictEqual(missing._tag, "CliFailure")
        assert.include(missing.message, 'absent.key": file not found')
        assert.deepStrictEqual(yield* TestConsole.logLines, [])
      })
    )
  )
})
