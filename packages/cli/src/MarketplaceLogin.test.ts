/**
 * Unit tests of the marketplace login URL logic: flag checks, plan resolution, claims, URL shape,
 * the signer (verified with the test key) and the login-redirect answers.
 */
import { NodeServices } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Effect, FileSystem, Option, Result } from "effect"
import { TestClock } from "effect/testing"
import { jwtVerify } from "jose"
import * as NodePath from "node:path"
import type { LoadedConfig } from "./CliConfig.ts"
import {
  buildLoginClaims,
  LoginNonce,
  loginRedirectResponse,
  loginUrlWithToken,
  makeLoginUrlSigner,
  marketplaceLoginFlagErrors,
  parseMarketplaceUrl,
  parseReturnTo,
  resolveMarketplaceLoginPlan
} from "./MarketplaceLogin.ts"
import type { LoginUrlSigner, MarketplaceLoginFlags, MarketplaceLoginPlan } from "./MarketplaceLogin.ts"
import { TokenId } from "./TokenId.ts"

const flags = (overrides: Partial<MarketplaceLoginFlags> = {}): MarketplaceLoginFlags => ({
  actorId: Option.none(),
  returnTo: Option.none(),
  expiresIn: Option.none(),
  marketplaceUrl: Option.none(),
  privateKeyPath: Option.none(),
  secretKeyPath: Option.some("/keys/secret"),
  ...overrides
})
const noConfig: LoadedConfig = { source: undefined, config: {} }
const config = (value: LoadedConfig["config"]): LoadedConfig => ({ source: "/home/u/.svc.yaml", config: value })

const plan = (f: MarketplaceLoginFlags, loaded: LoadedConfig = noConfig) => {
  const result = resolveMarketplaceLoginPlan(f, loaded)
  if (Result.isFailure(result)) throw new Error(`unexpected failure: ${result.failure.message}`)
  return result.success
}
const failure = (f: MarketplaceLoginFlags, loaded: LoadedConfig = noConfig) => {
  const result = resolveMarketplaceLoginPlan(f, loaded)
  if (Result.isSuccess(result)) throw new Error("unexpected success")
  return result.failure.message
}
const success = <A, E>(result: Result.Result<A, E>): A => {
  if (Result.isFailure(result)) throw new Error("unexpected failure")
  return result.success
}
const failed = <A, E extends { readonly message: string }>(result: Result.Result<A, E>): string => {
  if (Result.isSuccess(result)) throw new Error("unexpected success")
  return result.failure.message
}

describe("parseMarketplaceUrl", () => {
  it("appends /marketplace/login to the base, keeping a base path", () => {
    assert.strictEqual(
      success(parseMarketplaceUrl("http://127.0.0.1:8080", "x")),
      "http://127.0.0.1:8080/marketplace/login"
    )
    assert.strictEqual(success(parseMarketplaceUrl("https://p.example/", "x")), "https://p.example/marketplace/login")
    assert.strictEqual(
      success(parseMarketplaceUrl("https://p.example/svc//", "x")),
      "https://p.example/svc/marketplace/login"
    )
  })

  it("rejects non-http, relative, credentialed and query/fragment URLs naming the source", () => {
    assert.strictEqual(
      failed(parseMarketplaceUrl("ftp://p.example", "--marketplaceUrl")),
      '--marketplaceUrl: expected an http or https URL (got "ftp://p.example")'
    )
    assert.include(failed(parseMarketplaceUrl("p.example", "--marketplaceUrl")), "expected an absolute http(s) URL")
    // the rejected value is not echoed: it holds a password
    assert.strictEqual(failed(parseMarketplaceUrl("https://u:pw@p.example", "x")), "x: must not contain credentials")
    assert.include(failed(parseMarketplaceUrl("https://p.example/?a=1", "x")), "must not contain a query or fragment")
    assert.include(failed(parseMarketplaceUrl("https://p.example/#a", "x")), "must not contain a query or fragment")
  })
})

describe("parseReturnTo", () => {
  it("accepts absolute http(s) URLs and absolute paths", () => {
    for (const value of ["https://app.example/x?y=1", "http://127.0.0.1:3000/", "/integrations?tab=2"]) {
      assert.strictEqual(success(parseReturnTo(value, "--returnTo")), value)
    }
  })

  it("rejects protocol-relative, relative and non-http values", () => {
    for (const value of ["//evil.example", "/\\evil.example", "integrations", "javascript:alert(1)", ""]) {
      assert.strictEqual(
        failed(parseReturnTo(value, "--returnTo")),
        `--returnTo: expected an absolute http(s) URL or a path starting with "/" (got "${value}")`
      )
    }
  })
})

describe("marketplaceLoginFlagErrors", () => {
  it("accepts the defaults and reports every malformed flag", () => {
    assert.deepStrictEqual(marketplaceLoginFlagErrors(flags()), [])
    assert.deepStrictEqual(
      marketplaceLoginFlagErrors(
        flags({
          actorId: Option.some(" "),
          privateKeyPath: Option.some("k"),
          expiresIn: Option.some("5x"),
          marketplaceUrl: Option.some("nope"),
          returnTo: Option.some("//x")
        })
      ).map((error) => error.split(":")[0]),
      [
        "--actorId must not be empty",
        "--privateKeyPath and --secretKeyPath are mutually exclusive",
        "--expires-in",
        "--marketplaceUrl",
        "--returnTo"
      ]
    )
  })
})

describe("resolveMarketplaceLoginPlan", () => {
  it("defaults: admin actor, 5 minutes, http://127.0.0.1:8080, no return_to", () => {
    assert.deepStrictEqual(plan(flags()), {
      subject: "admin",
      expiresInSeconds: 300,
      loginUrl: "http://127.0.0.1:8080/marketplace/login",
      returnTo: undefined,
      key: { alg: "HS256", path: "/keys/secret" }
    })
  })

  it("takes actor, base URL and key from the config when no flag is given", () => {
    const loaded = config({
      admin_username: "root",
      admin_private_key_path: "/keys/admin.pem",
      server: { marketplace: "https://public.example/base" }
    })
    assert.deepStrictEqual(plan(flags({ secretKeyPath: Option.none() }), loaded), {
      subject: "root",
      expiresInSeconds: 300,
      loginUrl: "https://public.example/base/marketplace/login",
      returnTo: undefined,
      key: { alg: "RS256", path: "/keys/admin.pem" }
    })
  })

  it("flags win over the config", () => {
    const loaded = config({ admin_username: "root", server: { marketplace: "https://public.example" } })
    const resolved = plan(
      flags({
        actorId: Option.some("user-1"),
        expiresIn: Option.some("1m30s"),
        marketplaceUrl: Option.some("http://localhost:9000"),
        returnTo: Option.some("/back")
      }),
      loaded
    )
    assert.strictEqual(resolved.subject, "user-1")
    assert.strictEqual(resolved.expiresInSeconds, 90)
    assert.strictEqual(resolved.loginUrl, "http://localhost:9000/marketplace/login")
    assert.strictEqual(resolved.returnTo, "/back")
  })

  it("fails clearly on a bad config URL and on a missing key", () => {
    assert.strictEqual(
      failure(flags(), config({ server: { marketplace: "ftp://public.example" } })),
      'config "/home/u/.svc.yaml" server.marketplace: expected an http or https URL (got "ftp://public.example")'
    )
    assert.include(failure(flags({ secretKeyPath: Option.none() })), "no signing key")
  })
})

describe("claims and URL", () => {
  it("builds the sign-jwt claims with aud public, exp and nonce", () => {
    assert.deepStrictEqual(
      buildLoginClaims({ subject: "u", issuedAt: 1_000, jti: "j", nonce: "n", expiresInSeconds: 300 }),
      { sub: "u", iat: 1_000, jti: "j", exp: 1_300, aud: ["public"], nonce: "n" }
    )
  })

  it("puts token and return_to in the query, percent-encoded", () => {
    const url = new URL(loginUrlWithToken("https://p.example/marketplace/login", "a.b.c", "https://x.example/?q=1&r"))
    assert.strictEqual(url.origin + url.pathname, "https://p.example/marketplace/login")
    assert.deepStrictEqual([...url.searchParams.keys()], ["token", "return_to"])
    assert.strictEqual(url.searchParams.get("token"), "a.b.c")
    assert.strictEqual(url.searchParams.get("return_to"), "https://x.example/?q=1&r")
    assert.strictEqual(
      loginUrlWithToken("http://h/marketplace/login", "t", undefined),
      "http://h/marketplace/login?token=t"
    )
  })

  it.effect("the default nonce is 32 random bytes in base64url, new each time", () =>
    Effect.gen(function* () {
      const source = yield* LoginNonce
      const [a, b] = [yield* source.next, yield* source.next]
      assert.match(a, /^[A-Za-z0-9_-]{43}$/)
      assert.strictEqual(Buffer.from(a, "base64url").length, 32)
      assert.notStrictEqual(a, b)
    })
  )
})

const secret = new TextEncoder().encode("0123456789abcdef0123456789abcdef-login\n")

/** A signer over an HS256 secret file in a temporary directory, with a counter-based nonce. */
const withSigner = <A, E, R>(f: (signer: LoginUrlSigner) => Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const dir = yield* fs.makeTempDirectoryScoped()
    const path = NodePath.join(dir, "shared.key")
    yield* fs.writeFile(path, secret)
    const loginPlan: MarketplaceLoginPlan = {
      subject: "user-7",
      expiresInSeconds: 300,
      loginUrl: "http://127.0.0.1:8080/marketplace/login",
      returnTo: undefined,
      key: { alg: "HS256", path }
    }
    let count = 0
    return yield* f(yield* makeLoginUrlSigner(loginPlan)).pipe(
      Effect.provideService(LoginNonce, { next: Effect.sync(() => `nonce-${++count}`) }),
      Effect.provideService(TokenId, { next: Effect.succeed("jti-fixed") })
    )
  }).pipe(Effect.scoped, Effect.provide(NodeServices.layer))

const claimsOf = (location: string, nowMillis: number) =>
  Effect.promise(() =>
    jwtVerify(new URL(location).searchParams.get("token") ?? "", secret, {
      algorithms: ["HS256"],
      audience: "public",
      currentDate: new Date(nowMillis)
    })
  )

describe("makeLoginUrlSigner", () => {
  it.effect("signs a token that verifies with the key, with the exact login claims", () =>
    withSigner((signer) =>
      Effect.gen(function* () {
        yield* TestClock.setTime(1_700_000_000_500)
        const url = yield* signer.sign("/back")
        assert.strictEqual(new URL(url).searchParams.get("return_to"), "/back")
        const verified = yield* claimsOf(url, 1_700_000_000_500)
        assert.deepStrictEqual(verified.protectedHeader, { alg: "HS256", typ: "JWT" })
        assert.deepStrictEqual(verified.payload, {
          sub: "user-7",
          iat: 1_700_000_000,
          jti: "jti-fixed",
          exp: 1_700_000_300,
          aud: ["public"],
          nonce: "nonce-1"
        })
      })
    )
  )
})

describe("loginRedirectResponse", () => {
  it.effect("GET answers 302 to a fresh URL, passing return_to through, else the default", () =>
    withSigner((signer) =>
      Effect.gen(function* () {
        yield* TestClock.setTime(5_000_000)
        const respond = loginRedirectResponse(signer, "/default")
        const first = yield* respond("GET", "/login-redirect?return_to=https%3A%2F%2Fapp.example%2Fa%3Fb%3D1")
        const second = yield* respond("GET", "/")
        for (const answer of [first, second]) {
          assert.strictEqual(answer.status, 302)
          assert.strictEqual(answer.headers["Cache-Control"], "no-store")
        }
        const [one, two] = [first.headers.Location ?? "", second.headers.Location ?? ""]
        assert.strictEqual(new URL(one).searchParams.get("return_to"), "https://app.example/a?b=1")
        assert.strictEqual(new URL(two).searchParams.get("return_to"), "/default")
        assert.strictEqual((yield* claimsOf(one, 5_000_000)).payload.nonce, "nonce-1")
        assert.strictEqual((yield* claimsOf(two, 5_000_000)).payload.nonce, "nonce-2")
      })
    )
  )

  it.effect("other methods answer 405 without signing", () =>
    withSigner((signer) =>
      Effect.gen(function* () {
        const answer = yield* loginRedirectResponse(signer, undefined)("POST", "/")
        assert.strictEqual(answer.status, 405)
        assert.strictEqual(answer.headers.Allow, "GET, HEAD")
        assert.isUndefined(answer.headers.Location)
        const next = yield* loginRedirectResponse(signer, undefined)("GET", "/")
        assert.strictEqual((yield* claimsOf(next.headers.Location ?? "", 0)).payload.nonce, "nonce-1")
      })
    )
  )
})
