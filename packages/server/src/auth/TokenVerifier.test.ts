import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { CompactSign, type CryptoKey, exportSPKI, generateKeyPair, type JWTPayload, SignJWT } from "jose"
import type { ServiceId } from "@svc/domain/Auth"
import { CounterStore, StoreUnavailable } from "../stores/CounterStore.ts"
import { NonceStore } from "../stores/NonceStore.ts"
import { InvalidSigningKey, TokenRejected, type TokenRejectionReason, TokenVerifier } from "./TokenVerifier.ts"

const now = 1_750_000_000
const encoder = new TextEncoder()
const hsSecret = encoder.encode("an-hs256-shared-secret-of-at-least-32-bytes")

const rsa = await generateKeyPair("RS256", { extractable: true })
const otherRsa = await generateKeyPair("RS256")
const rs384 = await generateKeyPair("RS384")
const es256 = await generateKeyPair("ES256", { extractable: true })
const publicKeyPem = await exportSPKI(rsa.publicKey)

const sign = (claims: JWTPayload, alg: string, key: CryptoKey | Uint8Array): Promise<string> =>
  new SignJWT(claims).setProtectedHeader({ alg, typ: "JWT" }).sign(key)

const signRaw = (claims: unknown, key: CryptoKey): Promise<string> =>
  new CompactSign(encoder.encode(JSON.stringify(claims))).setProtectedHeader({ alg: "RS256" }).sign(key)

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

const rsLayer = TokenVerifier.layerNoDeps({ algorithm: "RS256", publicKeyPem }).pipe(
  Layer.provide(NonceStore.layerMemory)
)
const hsLayer = TokenVerifier.layerNoDeps({ algorithm: "HS256", secret: hsSecret }).pipe(
  Layer.provide(NonceStore.layerMemory)
)

const verifyWith = (layer: typeof rsLayer, token: string, service: ServiceId = "api") =>
  Effect.gen(function* () {
    yield* TestClock.setTime(now * 1000)
    const verifier = yield* TokenVerifier
    return yield* verifier.verify(token, service)
  }).pipe(Effect.provide(layer))

const expectReason = (layer: typeof rsLayer, token: string, reason: TokenRejectionReason, service: ServiceId = "api") =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(verifyWith(layer, token, service))
    const error = Exit.findErrorOption(exit)
    assert.isTrue(Option.isSome(error), `expected ${reason}, token was accepted`)
    if (Option.isSome(error)) {
      assertRejected(error.value, reason)
    }
  })

const base = { sub: "actor-1", iat: now }

// Compare the reason field itself: chai's deep equality does not look inside Error instances.
const assertRejected = (error: unknown, reason: TokenRejectionReason) => {
  assert.instanceOf(error, TokenRejected)
  assert.strictEqual(error instanceof TokenRejected ? error.reason : undefined, reason)
}

describe("TokenVerifier attack table", () => {
  it.effect("accepts a valid RS256 token and decodes its claims", () =>
    Effect.gen(function* () {
      const permissions = [{ namespace: "root.acme.**", resources: ["connections"], verbs: ["get"] }]
      const token = yield* Effect.promise(() =>
        sign({ ...base, exp: now + 300, namespace: "root.acme", permissions }, "RS256", rsa.privateKey)
      )
      const verified = yield* verifyWith(rsLayer, token)
      assert.strictEqual(verified.algorithm, "RS256")
      assert.deepStrictEqual(verified.claims, {
        sub: "actor-1",
        iat: now,
        exp: now + 300,
        namespace: "root.acme",
        permissions
      })
    })
  )

  it.effect("accepts a valid HS256 token without exp", () =>
    Effect.gen(function* () {
      const token = yield* Effect.promise(() => sign(base, "HS256", hsSecret))
      const verified = yield* verifyWith(hsLayer, token, "worker")
      assert.strictEqual(verified.algorithm, "HS256")
      assert.deepStrictEqual(verified.claims, base)
    })
  )

  it.effect("refuses RS384 and ES256 tokens against an RS256 key", () =>
    Effect.gen(function* () {
      yield* expectReason(
        rsLayer,
        yield* Effect.promise(() => sign(base, "RS384", rs384.privateKey)),
        "algorithm_not_allowed"
      )
      yield* expectReason(
        rsLayer,
        yield* Effect.promise(() => sign(base, "ES256", es256.privateKey)),
        "algorithm_not_allowed"
      )
    })
  )

  it.effect("refuses an RS256 token against an HS256 secret", () =>
    Effect.gen(function* () {
      const token = yield* Effect.promise(() => sign(base, "RS256", rsa.privateKey))
      yield* expectReason(hsLayer, token, "algorithm_not_allowed")
    })
  )

  it.effect("refuses alg none, with or without a signature part", () =>
    Effect.gen(function* () {
      const unsigned = `${b64({ alg: "none", typ: "JWT" })}.${b64(base)}`
      yield* expectReason(rsLayer, `${unsigned}.`, "algorithm_not_allowed")
      yield* expectReason(hsLayer, `${unsigned}.`, "algorithm_not_allowed")
      yield* expectReason(rsLayer, `${b64({ alg: "NONE" })}.${b64(base)}.`, "algorithm_not_allowed")
    })
  )

  it.effect("algorithm confusion: HS256 signed with the RS256 public key PEM is refused", () =>
    Effect.gen(function* () {
      const token = yield* Effect.promise(() => sign(base, "HS256", encoder.encode(publicKeyPem)))
      yield* expectReason(rsLayer, token, "algorithm_not_allowed")
    })
  )

  it.effect("expired beyond the 60 s leeway is refused; within it is accepted", () =>
    Effect.gen(function* () {
      yield* expectReason(
        rsLayer,
        yield* Effect.promise(() => sign({ ...base, exp: now - 61 }, "RS256", rsa.privateKey)),
        "expired"
      )
      const within = yield* Effect.promise(() => sign({ ...base, exp: now - 59 }, "RS256", rsa.privateKey))
      assert.strictEqual((yield* verifyWith(rsLayer, within)).claims.exp, now - 59)
    })
  )

  it.effect("a remembered signature still has its times, audience and nonce checked on every use", () =>
    Effect.gen(function* () {
      const verifier = yield* TokenVerifier
      yield* TestClock.setTime(now * 1000)
      const token = yield* Effect.promise(() => sign({ ...base, exp: now + 30, aud: "api" }, "RS256", rsa.privateKey))
      assert.strictEqual((yield* verifier.verify(token, "api")).claims.sub, "actor-1")
      assert.strictEqual((yield* verifier.verify(token, "api")).claims.sub, "actor-1")
      assertRejected(yield* Effect.flip(verifier.verify(token, "admin-api")), "audience")
      yield* TestClock.setTime((now + 91) * 1000)
      assertRejected(yield* Effect.flip(verifier.verify(token, "api")), "expired")
      const early = yield* Effect.promise(() => sign({ ...base, nbf: now + 200 }, "RS256", rsa.privateKey))
      yield* TestClock.setTime((now + 200) * 1000)
      assert.strictEqual((yield* verifier.verify(early, "api")).claims.sub, "actor-1")
      yield* TestClock.setTime(now * 1000)
      assertRejected(yield* Effect.flip(verifier.verify(early, "api")), "not_yet_valid")
      const once = yield* Effect.promise(() =>
        sign({ ...base, exp: now + 30, nonce: "n-cached" }, "RS256", rsa.privateKey)
      )
      yield* verifier.verify(once, "api")
      assertRejected(yield* Effect.flip(verifier.verify(once, "api")), "nonce_replayed")
    }).pipe(Effect.provide(rsLayer))
  )

  it.effect("nbf beyond the leeway is not_yet_valid; within it is accepted", () =>
    Effect.gen(function* () {
      yield* expectReason(
        rsLayer,
        yield* Effect.promise(() => sign({ ...base, nbf: now + 61 }, "RS256", rsa.privateKey)),
        "not_yet_valid"
      )
      const within = yield* Effect.promise(() => sign({ ...base, nbf: now + 59 }, "RS256", rsa.privateKey))
      assert.strictEqual((yield* verifyWith(rsLayer, within)).claims.nbf, now + 59)
    })
  )

  it.effect("checks the audience against the service", () =>
    Effect.gen(function* () {
      const adminOnly = yield* Effect.promise(() => sign({ ...base, aud: "admin-api" }, "RS256", rsa.privateKey))
      yield* expectReason(rsLayer, adminOnly, "audience", "api")
      assert.strictEqual((yield* verifyWith(rsLayer, adminOnly, "admin-api")).claims.aud, "admin-api")
      const list = yield* Effect.promise(() => sign({ ...base, aud: ["worker", "api"] }, "RS256", rsa.privateKey))
      assert.deepStrictEqual((yield* verifyWith(rsLayer, list, "api")).claims.aud, ["worker", "api"])
      yield* expectReason(rsLayer, list, "audience", "public")
      const foreign = yield* Effect.promise(() => sign({ ...base, aud: "https://elsewhere" }, "RS256", rsa.privateKey))
      yield* expectReason(rsLayer, foreign, "audience", "api")
    })
  )

  it.effect("a nonce is single use", () =>
    Effect.gen(function* () {
      const token = yield* Effect.promise(() => sign({ ...base, exp: now + 60, nonce: "n-1" }, "RS256", rsa.privateKey))
      const verifier = yield* TokenVerifier
      yield* TestClock.setTime(now * 1000)
      assert.strictEqual((yield* verifier.verify(token, "api")).claims.nonce, "n-1")
      const second = yield* Effect.flip(verifier.verify(token, "api"))
      assertRejected(second, "nonce_replayed")
    }).pipe(Effect.provide(rsLayer))
  )

  it.effect("a nonce without exp is refused and not consumed", () =>
    Effect.gen(function* () {
      const token = yield* Effect.promise(() => sign({ ...base, nonce: "n-2" }, "RS256", rsa.privateKey))
      yield* expectReason(rsLayer, token, "nonce_without_exp")
    })
  )

  it.effect("a forged token does not consume the nonce of a genuine one", () =>
    Effect.gen(function* () {
      const claims = { ...base, exp: now + 60, nonce: "n-3" }
      const forged = yield* Effect.promise(() => sign(claims, "RS256", otherRsa.privateKey))
      const expired = yield* Effect.promise(() => sign({ ...claims, exp: now - 120 }, "RS256", rsa.privateKey))
      const genuine = yield* Effect.promise(() => sign(claims, "RS256", rsa.privateKey))
      const verifier = yield* TokenVerifier
      yield* TestClock.setTime(now * 1000)
      assertRejected(yield* Effect.flip(verifier.verify(forged, "api")), "bad_signature")
      assertRejected(yield* Effect.flip(verifier.verify(expired, "api")), "expired")
      assert.strictEqual((yield* verifier.verify(genuine, "api")).claims.nonce, "n-3")
    }).pipe(Effect.provide(rsLayer))
  )

  it.effect("a tampered payload fails the signature", () =>
    Effect.gen(function* () {
      const token = yield* Effect.promise(() => sign({ ...base, exp: now + 60 }, "RS256", rsa.privateKey))
      const [header, , signature] = token.split(".")
      const tampered = `${header}.${b64({ ...base, sub: "root-admin", exp: now + 60 })}.${signature}`
      yield* expectReason(rsLayer, tampered, "bad_signature")
    })
  )

  it.effect("a token signed by another RSA key fails the signature", () =>
    Effect.gen(function* () {
      yield* expectReason(
        rsLayer,
        yield* Effect.promise(() => sign(base, "RS256", otherRsa.privateKey)),
        "bad_signature"
      )
    })
  )

  it.effect("garbage is malformed", () =>
    Effect.gen(function* () {
      for (const token of ["", "garbage", "a.b.c", "...", `${b64(["RS256"])}.${b64(base)}.c2ln`, "x".repeat(20_000)]) {
        yield* expectReason(rsLayer, token, "malformed")
      }
      // The signature is checked before the payload is parsed.
      yield* expectReason(rsLayer, `${b64({ alg: "RS256" })}.%%%.c2ln`, "bad_signature")
      const signedArray = yield* Effect.promise(() => signRaw([1], rsa.privateKey))
      yield* expectReason(rsLayer, signedArray, "malformed")
    })
  )

  it.effect("claims that do not decode are claims_invalid", () =>
    Effect.gen(function* () {
      for (const claims of [
        { iat: now },
        { sub: "" },
        { sub: 42 },
        { ...base, aud: ["api", "bogus"] },
        { ...base, permissions: [{ namespace: "root" }] },
        { ...base, exp: "tomorrow" }
      ]) {
        yield* expectReason(rsLayer, yield* Effect.promise(() => signRaw(claims, rsa.privateKey)), "claims_invalid")
      }
    })
  )

  it.effect("claims carrying NUL, control characters or lone surrogates are claims_invalid, before any store", () =>
    Effect.gen(function* () {
      for (const bad of ["a\u0000b", "a\r\nb", "a\u001bb", "a\u007f", "a\ud800"]) {
        for (const claims of [
          { ...base, sub: bad },
          { ...base, jti: bad },
          { ...base, namespace: bad },
          { ...base, exp: now + 60, nonce: bad },
          { ...base, permissions: [{ namespace: "root", resources: [bad], verbs: ["*"] }] }
        ]) {
          yield* expectReason(rsLayer, yield* Effect.promise(() => signRaw(claims, rsa.privateKey)), "claims_invalid")
        }
      }
    })
  )
})

describe("TokenVerifier configuration", () => {
  const build = (layer: Layer.Layer<TokenVerifier, InvalidSigningKey, NonceStore>) =>
    Effect.gen(function* () {
      const exit = yield* TokenVerifier.pipe(
        Effect.provide(layer.pipe(Layer.provide(NonceStore.layerMemory))),
        Effect.exit
      )
      const error = Exit.findErrorOption(exit)
      assert.isTrue(Option.isSome(error) && error.value instanceof InvalidSigningKey)
    })

  it.effect("refuses a short HS256 secret, a non-RSA key and a non-key", () =>
    Effect.gen(function* () {
      yield* build(TokenVerifier.layerNoDeps({ algorithm: "HS256", secret: encoder.encode("short") }))
      const ecPem = yield* Effect.promise(() => exportSPKI(es256.publicKey))
      yield* build(TokenVerifier.layerNoDeps({ algorithm: "RS256", publicKeyPem: ecPem }))
      yield* build(TokenVerifier.layerNoDeps({ algorithm: "RS256", publicKeyPem: "not a pem" }))
    })
  )

  it.effect("a counter store outage on a nonce token is StoreUnavailable, not a rejection", () =>
    Effect.gen(function* () {
      const down = Layer.succeed(CounterStore)({
        setIfAbsent: () => Effect.fail(new StoreUnavailable({ operation: "setIfAbsent", cause: new Error("down") })),
        get: () => Effect.succeed(Option.none()),
        delete: () => Effect.succeed(false),
        ping: () => Effect.void
      })
      const layer = TokenVerifier.layerNoDeps({ algorithm: "RS256", publicKeyPem }).pipe(
        Layer.provide(NonceStore.layerNoDeps),
        Layer.provide(down)
      )
      const token = yield* Effect.promise(() => sign({ ...base, exp: now + 60, nonce: "n-4" }, "RS256", rsa.privateKey))
      const error = yield* Effect.flip(verifyWith(layer, token))
      assert.instanceOf(error, StoreUnavailable)
    })
  )
})
