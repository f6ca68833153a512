import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Layer, Stdio, Stream } from "effect"
import { CliError } from "effect/cli"
import { TestClock, TestConsole } from "effect/testing"
import { importPKCS8, importSPKI, jwtVerify, SignJWT } from "jose"
import { generateKeyPairSync } from "node:crypto"
import * as NodePath from "node:path"
import { runCli } from "./Cli.ts"
import { ConfigLocation } from "./CliConfig.ts"
import { TokenId } from "./TokenId.ts"

const { privateKey, publicKey } = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  publicKeyEncoding: { type: "spki", format: "pem" },
  privateKeyEncoding: { type: "pkcs8", format: "pem" }
})
const secret = new TextEncoder().encode("0123456789abcdef0123456789abcdef-shared\n")

interface Files {
  readonly home: string
  readonly privatePath: string
  readonly publicPath: string
  readonly secretPath: string
}

/** Runs `f` with a temporary home holding the keys, a fixed jti, a test console and real files. */
const withFiles = <A, E, R>(f: (files: Files) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const home = yield* fs.makeTempDirectoryScoped()
    const files: Files = {
      home,
      privatePath: NodePath.join(home, "admin.pem"),
      publicPath: NodePath.join(home, "admin.pub.pem"),
      secretPath: NodePath.join(home, "shared.key")
    }
    yield* fs.writeFileString(files.privatePath, privateKey)
    yield* fs.writeFileString(files.publicPath, publicKey)
    yield* fs.writeFile(files.secretPath, secret)
    return yield* f(files).pipe(Effect.provide(ConfigLocation.layer(home)))
  }).pipe(
    Effect.provideService(TokenId, { next: Effect.succeed("jti-fixed") }),
    Effect.provide(Layer.mergeAll(NodeServices.layer, TestConsole.layer))
  )

const withStdin = (text: string) =>
  Effect.provide(Stdio.layerTest({ stdin: Stream.make(new TextEncoder().encode(text)) }))

const signed = Effect.gen(function* () {
  const lines = yield* TestConsole.logLines
  assert.strictEqual(lines.length, 1)
  return String(lines[0])
})

describe("cli sign-jwt (in process)", () => {
  it.effect("signs HS256 with the raw secret bytes and the exact claims", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        yield* TestClock.setTime(1_700_000_000_000)
        yield* runCli([
          "sign-jwt",
          "--actorId",
          "user-1",
          "--apis",
          "worker,api",
          "--expires-in",
          "1h30m",
          "--secretKeyPath",
          files.secretPath
        ])
        const token = yield* signed
        const verified = yield* Effect.promise(() =>
          jwtVerify(token, secret, { algorithms: ["HS256"], currentDate: new Date(1_700_000_000_000) })
        )
        assert.deepStrictEqual(verified.protectedHeader, { alg: "HS256", typ: "JWT" })
        assert.deepStrictEqual(verified.payload, {
          sub: "user-1",
          iat: 1_700_000_000,
          jti: "jti-fixed",
          exp: 1_700_005_400,
          aud: ["api", "worker"]
        })
      })
    )
  )

  it.effect("uses the config file's admin_username and private key for --admin", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        yield* fs.writeFileString(
          NodePath.join(files.home, ".svc.yaml"),
          "admin_username: ops\nadmin_private_key_path: admin.pem\n"
        )
        yield* runCli(["sign-jwt", "--admin", "--no-expiry"])
        const token = yield* signed
        const key = yield* Effect.promise(() => importSPKI(publicKey, "RS256"))
        const verified = yield* Effect.promise(() => jwtVerify(token, key, { algorithms: ["RS256"] }))
        assert.deepStrictEqual(verified.protectedHeader, { alg: "RS256", typ: "JWT" })
        assert.deepStrictEqual(verified.payload, { sub: "ops", iat: 0, jti: "jti-fixed" })
      })
    )
  )

  it.effect("a dashboard preset adds its permissions and expires in 90 days", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        yield* runCli(["sign-jwt", "--admin", "--dashboard-preset", "aggregate", "--secretKeyPath", files.secretPath])
        const token = yield* signed
        const verified = yield* Effect.promise(() =>
          jwtVerify(token, secret, { algorithms: ["HS256"], currentDate: new Date(0) })
        )
        assert.strictEqual(verified.payload.exp, 7_776_000)
        assert.deepStrictEqual(verified.payload.permissions, [
          { namespace: "root.**", resources: ["app-metrics"], verbs: ["query", "schema"] },
          {
            namespace: "root.**",
            resources: ["namespaces", "connectors", "connections", "actors", "rate_limits"],
            verbs: ["list"]
          }
        ])
      })
    )
  )

  it.effect.each([
    [["--admin", "--actorId", "a"], "--admin and --actorId are mutually exclusive"],
    [["--expires-in", "1h"], "one of --admin or --actorId <externalId> is required"],
    [["--admin", "--expires-in", "1h", "--no-expiry"], "--expires-in and --no-expiry are mutually exclusive"],
    [
      ["--admin", "--privateKeyPath", "k", "--secretKeyPath", "s"],
      "--privateKeyPath and --secretKeyPath are mutually exclusive"
    ],
    [
      ["--admin", "--permissions-file", "p", "--dashboard-preset", "logs"],
      "--permissions-file and --dashboard-preset are mutually exclusive"
    ]
  ] as const)("rejects %j with a usage error on stderr only", ([args, message]) =>
    withFiles(() =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(runCli(["sign-jwt", ...args]))
        assert.isTrue(CliError.isCliError(error) && error._tag === "ShowHelp")
        if (CliError.isCliError(error) && error._tag === "ShowHelp") {
          assert.deepStrictEqual(
            error.errors.map((e) => e.message),
            [message]
          )
        }
        assert.deepStrictEqual(yield* TestConsole.logLines, [])
        assert.include((yield* TestConsole.errorLines).join("\n"), message)
      })
    )
  )

  it.effect("a failing handler writes only to stderr", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        const error = yield* Effect.flip(
          runCli([
            "sign-jwt",
            "--admin",
            "--permissions-file",
            NodePath.join(files.home, "missing.yaml"),
            "--secretKeyPath",
            files.secretPath
          ])
        )
        assert.strictEqual(error._tag, "CliFailure")
        assert.deepStrictEqual(yield* TestConsole.logLines, [])
        assert.include((yield* TestConsole.errorLines).join("\n"), "cannot read permissions file")
      })
    )
  )
})

const verifyOutput = Effect.gen(function* () {
  const lines = yield* TestConsole.logLines
  assert.strictEqual(lines.length, 1)
  return JSON.parse(String(lines[0]))
})

describe("cli verify-jwt (in process)", () => {
  it.effect("prints the header and claims of a valid RS256 token", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        const key = yield* Effect.promise(() => importPKCS8(privateKey, "RS256"))
        const token = yield* Effect.promise(() =>
          new SignJWT({ sub: "u", aud: ["api"], exp: 3_600 }).setProtectedHeader({ alg: "RS256" }).sign(key)
        )
        yield* runCli(["verify-jwt", "--publicKeyPath", files.publicPath]).pipe(withStdin(`  ${token}\n`))
        assert.deepStrictEqual(yield* verifyOutput, {
          header: { alg: "RS256" },
          claims: { sub: "u", aud: ["api"], exp: 3_600 }
        })
      })
    )
  )

  it.effect("falls back to the public half of the configured private key", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        const fs = yield* FileSystem.FileSystem
        yield* fs.writeFileString(
          NodePath.join(files.home, ".svc.yaml"),
          `admin_private_key_path: ${files.privatePath}\n`
        )
        yield* runCli(["sign-jwt", "--actorId", "x"])
        const token = yield* signed
        yield* runCli(["verify-jwt"]).pipe(withStdin(token))
        const lines = yield* TestConsole.logLines
        assert.strictEqual(JSON.parse(String(lines[1])).claims.sub, "x")
      })
    )
  )

  const rejected = (args: ReadonlyArray<string>, token: string) =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(runCli(["verify-jwt", ...args]).pipe(withStdin(token)))
      assert.deepStrictEqual(yield* TestConsole.logLines, [])
      return error.message
    })

  it.effect("rejects an HS256 token forged with the RS256 public key as secret", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        const forged = yield* Effect.promise(() =>
          new SignJWT({ sub: "u" }).setProtectedHeader({ alg: "HS256" }).sign(new TextEncoder().encode(publicKey))
        )
        assert.strictEqual(
          yield* rejected(["--publicKeyPath", files.publicPath], forged),
          "token rejected: it is signed with HS256 but the key only verifies RS256"
        )
      })
    )
  )

  it.effect("rejects alg none", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url")
        const unsigned = `${part({ alg: "none" })}.${part({ sub: "u" })}.`
        assert.strictEqual(
          yield* rejected(["--secretKeyPath", files.secretPath], unsigned),
          "token rejected: it is signed with none but the key only verifies HS256"
        )
      })
    )
  )

  it.effect("rejects a token signed with another secret, an expired token and a token without sub", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        const sign = (claims: Record<string, unknown>, key: Uint8Array) =>
          Effect.promise(() => new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).sign(key))
        const other = new TextEncoder().encode("another secret that is long enough!!")
        const args = ["--secretKeyPath", files.secretPath]
        assert.strictEqual(
          yield* rejected(args, yield* sign({ sub: "u" }, other)),
          "token rejected: signature verification failed"
        )
        yield* TestClock.setTime(3_661_000)
        assert.include(yield* rejected(args, yield* sign({ sub: "u", exp: 3_600 }, secret)), "token rejected: expired")
        assert.strictEqual(
          yield* rejected(args, yield* sign({ iat: 1 }, secret)),
          "token rejected: the signature is valid but the claims are not svc token claims:\n  sub: Missing key"
        )
        assert.strictEqual(yield* rejected(args, "   \n"), "no token on standard input")
      })
    )
  )

  it.effect("accepts exp within the 60 s leeway", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        yield* TestClock.setTime(3_659_000)
        const token = yield* Effect.promise(() =>
          new SignJWT({ sub: "u", exp: 3_600 }).setProtectedHeader({ alg: "HS256" }).sign(secret)
        )
        yield* runCli(["verify-jwt", "--secretKeyPath", files.secretPath]).pipe(withStdin(token))
        assert.strictEqual((yield* verifyOutput).claims.exp, 3_600)
      })
    )
  )

  it.effect("treats the trailing newline of the secret file as part of the secret", () =>
    withFiles((files) =>
      Effect.gen(function* () {
        const trimmed = new TextEncoder().encode(new TextDecoder().decode(secret).trimEnd())
        const token = yield* Effect.promise(() =>
          new SignJWT({ sub: "u" }).setProtectedHeader({ alg: "HS256" }).sign(trimmed)
        )
        assert.strictEqual(
          yield* rejected(["--secretKeyPath", files.secretPath], token),
          "token rejected: signature verification failed"
        )
      })
    )
  )
})
