/** The authorization code grant: the authorize URL, the code exchange on the wire, parsing and failures. */
import { failureMetricReason } from "./TokenRequestFailed.ts"
import type { ServerResponse } from "node:http"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { OAuth2AuthorizationCodeAuth } from "@svc/domain/ConnectorAuth"
import { type LocalServer, localServer } from "../outbound/testing/LocalServer.ts"
import { authorizationUrl, exchangeCode } from "./AuthorizationCode.ts"
import { formOf, json, oauthTest, sendTo } from "./testing/OAuthTestKit.ts"
import { TokenRequestFailed, type TokenRequestFailureReason } from "./TokenRequestFailed.ts"

const secret = "cl1ent-s3cret/+&="
const code = "auth-c0de/+&="
const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
const now = 1_700_000_000_000
const client = { client_id: "app-1", client_secret: secret }
const exchange = { code, codeVerifier: verifier, redirectUri: "https://svc.example.com/oauth/callback" }

const authFor = (origin: string, extra: Record<string, unknown> = {}) =>
  Schema.decodeUnknownSync(OAuth2AuthorizationCodeAuth)({
    type: "oauth2",
    grant_type: "authorization_code",
    authorization_endpoint: `${origin}/authorize`,
    token_endpoint: `${origin}/token`,
    ...extra
  })

const exchangeWith = (server: LocalServer, extra: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    return yield* exchangeCode(authFor(server.origin, extra), client, exchange, yield* sendTo(server), now)
  })

describe("authorizationUrl", () => {
  const request = { clientId: "app 1", redirectUri: "https://svc.example.com/cb", state: "st-1", codeChallenge: "ch-1" }

  it("adds every authorization request parameter to the endpoint's own query", () => {
    const auth = authFor("https://idp.example.com", {
      authorization_endpoint: "https://idp.example.com/authorize?tenant=t1#frag",
      scopes: [{ name: "read" }, { name: "write", required: true }],
      scope_separator: ","
    })
    const url = new URL(authorizationUrl(auth, request))
    assert.strictEqual(url.origin + url.pathname, "https://idp.example.com/authorize")
    assert.strictEqual(url.hash, "")
    assert.deepStrictEqual(
      [...url.searchParams],
      [
        ["tenant", "t1"],
        ["response_type", "code"],
        ["client_id", "app 1"],
        ["redirect_uri", "https://svc.example.com/cb"],
        ["scope", "read,write"],
        ["state", "st-1"],
        ["code_challenge", "ch-1"],
        ["code_challenge_method", "S256"]
      ]
    )
  })

  it("omits scope when the definition has none", () => {
    const url = new URL(authorizationUrl(authFor("https://idp.example.com"), request))
    assert.isFalse(url.searchParams.has("scope"))
    assert.strictEqual(url.searchParams.get("response_type"), "code")
  })

  it("authorize_params and the endpoint's query only add, never replace ours", () => {
    const auth = authFor("https://idp.example.com", {
      authorization_endpoint: "https://idp.example.com/authorize?state=evil&prompt=login",
      scopes: [{ name: "a" }, { name: "b" }],
      authorize_params: {
        access_type: "offline",
        prompt: "consent",
        response_type: "token",
        client_id: "other",
        redirect_uri: "https://evil.example.com",
        scope: "admin",
        state: "fixed",
        code_challenge: "x",
        code_challenge_method: "plain"
      }
    })
    const url = new URL(authorizationUrl(auth, request))
    const all = (name: string) => url.searchParams.getAll(name)
    assert.deepStrictEqual(all("response_type"), ["code"])
    assert.deepStrictEqual(all("client_id"), ["app 1"])
    assert.deepStrictEqual(all("redirect_uri"), ["https://svc.example.com/cb"])
    assert.deepStrictEqual(all("scope"), ["a b"])
    assert.deepStrictEqual(all("state"), ["st-1"])
    assert.deepStrictEqual(all("code_challenge"), ["ch-1"])
    assert.deepStrictEqual(all("code_challenge_method"), ["S256"])
    assert.deepStrictEqual(all("prompt"), ["login"])
    assert.deepStrictEqual(all("access_type"), ["offline"])
  })
})

describe("exchangeCode", () => {
  oauthTest("client_secret_basic: code, redirect_uri and code_verifier in the body, token_params only add", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) =>
        json(response, 200, {
          access_token: "at-1",
          token_type: "Bearer",
          expires_in: 3600,
          refresh_token: "rt-1",
          scope: "read write"
        })
      )
      const token = yield* exchangeWith(server, {
        scopes: [{ name: "read" }, { name: "write", required: true }],
        token_params: { resource: "https://api.example.com", code: "other", code_verifier: "other" }
      })
      assert.deepStrictEqual(token, {
        access_token: "at-1",
        token_type: "Bearer",
        expires_at: now + 3_600_000,
        refresh_token: "rt-1",
        scope: "read write",
        obtained_at: now
      })
      const request = server.requests[0]
      assert.strictEqual(request?.method, "POST")
      assert.strictEqual(request?.url, "/token")
      assert.strictEqual(request?.headers["content-type"], "application/x-www-form-urlencoded")
      assert.strictEqual(
        request?.headers.authorization,
        `Basic ${Buffer.from("app-1:cl1ent-s3cret%2F%2B%26%3D").toString("base64")}`
      )
      assert.deepStrictEqual(formOf(request), {
        grant_type: "authorization_code",
        code,
        redirect_uri: exchange.redirectUri,
        code_verifier: verifier,
        resource: "https://api.example.com"
      })
    })
  )

  oauthTest("client_secret_post and none put the client in the body", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) =>
        json(response, 200, { access_token: "at-1", token_type: "bearer" })
      )
      yield* exchangeWith(server, { client_auth: "client_secret_post" })
      yield* exchangeWith(server, { client_auth: "none" })
      const [post, none] = server.requests
      assert.isUndefined(post?.headers.authorization)
      assert.deepStrictEqual(formOf(post), {
        grant_type: "authorization_code",
        code,
        redirect_uri: exchange.redirectUri,
        code_verifier: verifier,
        client_id: "app-1",
        client_secret: secret
      })
      assert.isUndefined(none?.headers.authorization)
      assert.deepStrictEqual(formOf(none), {
        grant_type: "authorization_code",
        code,
        redirect_uri: exchange.redirectUri,
        code_verifier: verifier,
        client_id: "app-1"
      })
    })
  )

  oauthTest("without scope in the answer the requested scope was granted; without expires_in no expiry", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) =>
        json(response, 200, { access_token: "at-1", token_type: "bearer" })
      )
      const token = yield* exchangeWith(server, { scopes: [{ name: "repo", required: true }, { name: "gist" }] })
      assert.deepStrictEqual(token, {
        access_token: "at-1",
        token_type: "bearer",
        scope: "repo gist",
        obtained_at: now
      })
      const unscoped = yield* exchangeWith(server)
      assert.deepStrictEqual(unscoped, { access_token: "at-1", token_type: "bearer", obtained_at: now })
    })
  )

  const failures: ReadonlyArray<
    readonly [string, (response: ServerResponse) => void, TokenRequestFailureReason, string]
  > = [
    ["invalid_grant", (r) => json(r, 400, { error: "invalid_grant" }), "invalid_grant", "invalid_grant"],
    ["invalid_client", (r) => json(r, 401, { error: "invalid_client" }), "invalid_client", "provider_rejected"],
    ["a bare 401", (r) => json(r, 401, ""), "invalid_client", "provider_rejected"],
    [
      "unauthorized_client",
      (r) => json(r, 400, { error: "unauthorized_client" }),
      "unauthorized_client",
      "provider_rejected"
    ],
    ["an unknown code", (r) => json(r, 400, { error: "invalid_request" }), "provider_error", "provider_rejected"],
    ["a 502", (r) => json(r, 502, "<html>bad gateway</html>"), "provider_5xx", "provider_5xx"],
    ["malformed JSON", (r) => json(r, 200, "{"), "malformed_response", "malformed_response"],
    ["no access_token", (r) => json(r, 200, { token_type: "bearer" }), "malformed_response", "malformed_response"],
    ["no token_type", (r) => json(r, 200, { access_token: "x" }), "malformed_response", "malformed_response"],
    [
      "a missing required scope",
      (r) => json(r, 200, { access_token: "x", token_type: "bearer", scope: "gist" }),
      "invalid_scope",
      "provider_rejected"
    ]
  ]
  for (const [name, answer, reason, metric] of failures) {
    oauthTest(`${name} → ${reason} (metric ${metric})`, () =>
      Effect.gen(function* () {
        const server = yield* localServer((_request, response) => answer(response))
        const error = yield* Effect.flip(exchangeWith(server, { scopes: [{ name: "repo", required: true }] }))
        assert.instanceOf(error, TokenRequestFailed)
        assert.strictEqual(error.reason, reason)
        assert.strictEqual(failureMetricReason(error), metric)
      })
    )
  }

  oauthTest("a disallowed endpoint and a stalled one are network errors", () =>
    Effect.gen(function* () {
      const server = yield* localServer(() => {})
      const auth = authFor(server.origin)
      const denied = yield* Effect.flip(
        exchangeCode(auth, client, exchange, yield* sendTo(server, { allowPrivateNetworks: false }), now)
      )
      assert.strictEqual(denied.reason, "network_error")
      assert.strictEqual(failureMetricReason(denied), "network_error")
      assert.strictEqual(server.requests.length, 0)
      const stalled = yield* Effect.flip(
        exchangeCode(auth, client, exchange, yield* sendTo(server, { totalMs: 200 }), now)
      )
      assert.strictEqual(stalled.reason, "timeout")
      assert.strictEqual(failureMetricReason(stalled), "network_error")
    })
  )

  oauthTest("no secret, code or verifier appears in an error, even when the provider echoes the request", () =>
    Effect.gen(function* () {
      const server = yield* localServer((request, response) =>
        json(response, 400, {
          error: `invalid_grant ${code}`,
          error_description: `code ${code} verifier ${verifier} secret ${secret}; body ${request.body.toString()}`
        })
      )
      const error = yield* Effect.flip(exchangeWith(server, { client_auth: "client_secret_post" }))
      assert.strictEqual(error.reason, "provider_error")
      const rendered = [error.message, String(error), JSON.stringify(error)].join("\n")
      for (const value of [secret, code, verifier]) {
        assert.notInclude(rendered, value)
        assert.notInclude(rendered, encodeURIComponent(value))
        assert.notInclude(rendered, new URLSearchParams([["", value]]).toString().slice(1))
      }
      assert.include(error.message, "[redacted]")
      const missing = yield* Effect.flip(
        exchangeCode(authFor(server.origin), { client_id: "app-1" }, exchange, yield* sendTo(server), now)
      )
      assert.strictEqual(missing.reason, "invalid_client")
      assert.strictEqual(server.requests.length, 1)
    })
  )
})
