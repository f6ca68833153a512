import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { jwtVerify } from "jose"
import { spawn } from "node:child_process"
import { generateKeyPairSync } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as NodePath from "node:path"
import { afterAll } from "vitest"

const bin = NodePath.resolve(import.meta.dirname, "../bin/cli")
const home = mkdtempSync(NodePath.join(tmpdir(), "svc-cli-e2e-"))
afterAll(() => rmSync(home, { recursive: true, force: true }))

const { privateKey, publicKey } = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  publicKeyEncoding: { type: "spki", format: "pem" },
  privateKeyEncoding: { type: "pkcs8", format: "pem" }
})
const file = (name: string, content: string | Uint8Array) => {
  const path = NodePath.join(home, name)
  writeFileSync(path, content)
  return path
}
const privatePath = file("admin.pem", privateKey)
const publicPath = file("admin.pub.pem", publicKey)
const secretText = "e2e-shared-secret-0123456789abcdefghij\n"
const secretPath = file("shared.key", secretText)

interface Outcome {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs `bin/cli` as a child process with HOME set to the test directory and the pinned node first on PATH. */
const cli = (args: ReadonlyArray<string>, input = "") =>
  Effect.callback<Outcome>((resume) => {
    const child = spawn(bin, args, {
      cwd: home,
      env: {
        ...process.env,
        HOME: home,
        NO_COLOR: "1",
        PATH: `${NodePath.dirname(process.execPath)}${NodePath.delimiter}${process.env.PATH ?? ""}`
      }
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk) => (stdout += chunk))
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("close", (code) => resume(Effect.succeed({ code, stdout, stderr })))
    child.stdin.end(input)
  })

const tokenLine = /^[\w-]+\.[\w-]+\.[\w-]+\n$/
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe("bin/cli (end to end)", () => {
  it.live("--help of each command mentions every flag", () =>
    Effect.gen(function* () {
      const [sign, verify] = yield* Effect.all([cli(["sign-jwt", "--help"]), cli(["verify-jwt", "--help"])], {
        concurrency: "unbounded"
      })
      assert.strictEqual(sign.code, 0)
      for (const flag of [
        "--admin",
        "--actorId",
        "--apis",
        "--expires-in",
        "--no-expiry",
        "--permissions-file",
        "--dashboard-preset",
        "--privateKeyPath",
        "--secretKeyPath",
        "--config"
      ])
        assert.include(sign.stdout, flag)
      assert.strictEqual(verify.code, 0)
      for (const flag of ["--publicKeyPath", "--secretKeyPath", "--config"]) assert.include(verify.stdout, flag)
    })
  )

  it.live("RS256: sign-jwt output verifies with verify-jwt --publicKeyPath", () =>
    Effect.gen(function* () {
      const sign = yield* cli([
        "sign-jwt",
        "--actorId",
        "user-42",
        "--apis",
        "public,api",
        "--expires-in",
        "2h",
        "--privateKeyPath",
        privatePath
      ])
      assert.strictEqual(sign.stderr, "")
      assert.strictEqual(sign.code, 0)
      assert.match(sign.stdout, tokenLine)
      const verify = yield* cli(["verify-jwt", "--publicKeyPath", publicPath], sign.stdout)
      assert.strictEqual(verify.code, 0)
      const { header, claims } = JSON.parse(verify.stdout)
      assert.deepStrictEqual(header, { alg: "RS256", typ: "JWT" })
      assert.deepStrictEqual(Object.keys(claims).sort(), ["aud", "exp", "iat", "jti", "sub"])
      assert.strictEqual(claims.sub, "user-42")
      assert.deepStrictEqual(claims.aud, ["api", "public"])
      assert.strictEqual(claims.exp - claims.iat, 7_200)
      assert.match(claims.jti, uuid)
    })
  )

  it.live("HS256 from the config file: --admin, permissions file, verify-jwt with the same config", () =>
    Effect.gen(function* () {
      const config = file("svc.yaml", "admin_username: root-admin\nadmin_shared_key_path: shared.key\n")
      const permissions = file(
        "perms.yaml",
        'permissions:\n  - namespace: "{{external_id}}"\n    resources: [connections]\n    verbs: [proxy]\n'
      )
      const sign = yield* cli(["--config", config, "sign-jwt", "--admin", "--permissions-file", permissions])
      assert.strictEqual(sign.stderr, "")
      assert.strictEqual(sign.code, 0)
      assert.match(sign.stdout, tokenLine)
      const verify = yield* cli(["verify-jwt", "--config", config], sign.stdout)
      assert.strictEqual(verify.stderr, "")
      assert.strictEqual(verify.code, 0)
      const { header, claims } = JSON.parse(verify.stdout)
      assert.deepStrictEqual(header, { alg: "HS256", typ: "JWT" })
      assert.strictEqual(claims.sub, "root-admin")
      assert.strictEqual(claims.exp - claims.iat, 3_600)
      assert.isUndefined(claims.aud)
      assert.deepStrictEqual(claims.permissions, [
        { namespace: "{{external_id}}", resources: ["connections"], verbs: ["proxy"] }
      ])
      // the whole file, trailing newline included, is the HMAC key
      const raw = new TextEncoder().encode(secretText)
      const verified = yield* Effect.promise(() => jwtVerify(sign.stdout.trim(), raw, { algorithms: ["HS256"] }))
      assert.strictEqual(verified.payload.sub, "root-admin")
    })
  )

  it.live("failures exit 1 with the reason on stderr and nothing on stdout", () =>
    Effect.gen(function* () {
      const badConfig = file("bad.yaml", "admin_username: 7\nserver:\n  ap: https://x\n")
      const [exclusive, missingConfig, invalidConfig, tampered] = yield* Effect.all(
        [
          cli(["sign-jwt", "--admin", "--actorId", "x", "--secretKeyPath", secretPath]),
          cli(["sign-jwt", "--admin", "--config", NodePath.join(home, "absent.yaml")]),
          cli(["sign-jwt", "--admin", "--config", badConfig]),
          cli(["verify-jwt", "--secretKeyPath", secretPath], "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.AAAA\n")
        ],
        { concurrency: "unbounded" }
      )
      for (const outcome of [exclusive, missingConfig, invalidConfig, tampered]) {
        assert.strictEqual(outcome.code, 1)
        assert.strictEqual(outcome.stdout, "")
      }
      assert.include(exclusive.stderr, "--admin and --actorId are mutually exclusive")
      assert.include(missingConfig.stderr, 'absent.yaml": file not found')
      assert.include(invalidConfig.stderr, "admin_username: Expected string")
      assert.include(invalidConfig.stderr, "server.ap: unknown key")
      assert.include(tampered.stderr, "token rejected: signature verification failed")
    })
  )
})
