/** Refreshing a token set: the request on the wire, what is kept from the old set, failures and their metric reasons. */
import { failureMetricReason } from "./TokenRequestFailed.ts"
import type { ServerResponse } from "node:http"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { OAuth2AuthorizationCodeAuth, type OAuth2TokenSet } from "@svc/domain/ConnectorAuth"
import { type LocalServer, localServer } from "../outbound/testing/LocalServer.ts"
import { hasRefreshToken, type RefreshableTokenSet, refreshTokenSet } from "./Refresh.ts"
import { formOf, json, oauthTest, sendTo } from "./testing/OAuthTestKit.ts"
import { TokenRequestFailed, type TokenRequestFailureReason } from "./TokenRequestFailed.ts"

const secret = "cl1ent-s3cret/+&="
const refreshToken = "rt-old/+&="
const accessToken = "at-old/+&="
const now = 1_700_000_000_000
const client = { client_id: "app-1", client_secret: secret }
const current: RefreshableTokenSet = {
  access_token: accessToken,
  token_type: "bearer",
  expires_at: now - 1_000,
  refresh_token: refreshToken,
  scope: "read write",
  obtained_at: now - 3_600_000
}

const authFor = (server: LocalServer, extra: Record<string, unknown> = {}) =>
  Schema.decodeUnknownSync(OAuth2AuthorizationCodeAuth)({
    type: "oauth2",
    grant_type: "authorization_code",
    authorization_endpoint: `${server.origin}/authorize`,
    token_endpoint: `${server.origin}/token`,
    scopes: [{ name: "read" }, { name: "write", required: true }],
    ...extra
  })

const refreshWith = (server: LocalServer, extra: Record<string, unknown> = {}, token = current) =>
  Effect.gen(function* () {
    return yield* refreshTokenSet(authFor(server, extra), client, token, yield* sendTo(server), now)
  })

describe("refreshTokenSet", () => {
  oauthTest("sends grant_type=refresh_token with client auth, no scope; token_params only add", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) =>
        json(response, 200, { access_token: "at-new", token_type: "bearer", expires_in: 600 })
      )
      yield* refreshWith(server, { token_params: { resource: "api", refresh_token: "other", scope: "admin" } })
      yield* refreshWith(server, { client_auth: "client_secret_post" })
      yield* refreshWith(server, { client_auth: "none" })
      const [basic, post, none] = server.requests
      assert.strictEqual(basic?.url, "/token")
      assert.strictEqual(
        basic?.headers.authorization,
        `Basic ${Buffer.from("app-1:cl1ent-s3cret%2F%2B%26%3D").toString("base64")}`
      )
      assert.strictEqual(
        basic?.body.toString(),
        "grant_type=refresh_token&refresh_token=rt-old%2F%2B%26%3D&resource=api&scope=admin"
      )
      assert.isUndefined(post?.headers.authorization)
      assert.deepStrictEqual(formOf(post), {
        grant_type: "refresh_token",
        refresh_token: refreshToken,
        client_id: "app-1",
        client_secret: secret
      })
      assert.isUndefined(none?.headers.authorization)
      assert.deepStrictEqual(formOf(none), {
        grant_type: "refresh_token",
        refresh_token: refreshToken,
        client_id: "app-1"
      })
    })
  )

  oauthTest("keeps the old refresh token and scope when the answer omits them; no expires_in, no expiry", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) =>
        json(response, 200, { access_token: "at-new", token_type: "bearer" })
      )
      const token = yield* refreshWith(server)
      assert.deepStrictEqual(token, {
        access_token: "at-new",
        token_type: "bearer",
        refresh_token: refreshToken,
        scope: "read write",
        obtained_at: now
      })
      const { scope: _scope, ...unscoped } = current
      const withoutScope = yield* refreshWith(server, {}, unscoped)
      assert.deepStrictEqual(withoutScope, {
        access_token: "at-new",
        token_type: "bearer",
        refresh_token: refreshToken,
        obtained_at: now
      })
    })
  )

  oauthTest("takes a rotated refresh token, the new scope and the new expiry", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) =>
        json(response, 200, {
          access_token: "at-new",
          token_type: "Bearer",
          refresh_token: "rt-new",
          scope: "read",
          expires_in: "120"
        })
      )
      const token = yield* refreshWith(server)
      assert.deepStrictEqual(token, {
        access_token: "at-new",
        token_type: "Bearer",
        expires_at: now + 120_000,
        refresh_token: "rt-new",
        scope: "read",
        obtained_at: now
      })
    })
  )

  it("hasRefreshToken tells which token sets can be refreshed", () => {
    const bare: OAuth2TokenSet = { access_token: "a", token_type: "bearer" }
    assert.isFalse(hasRefreshToken(bare))
    assert.isFalse(hasRefreshToken({ ...bare, refresh_token: "" }))
    assert.isTrue(hasRefreshToken(current))
  })

  const failures: ReadonlyArray<
    readonly [string, (response: ServerResponse) => void, TokenRequestFailureReason, string]
  > = [
    ["invalid_grant", (r) => json(r, 400, { error: "invalid_grant" }), "invalid_grant", "invalid_grant"],
    ["invalid_client", (r) => json(r, 401, { error: "invalid_client" }), "invalid_client", "provider_rejected"],
    ["invalid_scope", (r) => json(r, 400, { error: "invalid_scope" }), "invalid_scope", "provider_rejected"],
    [
      "unauthorized_client",
      (r) => json(r, 400, { error: "unauthorized_client" }),
      "unauthorized_client",
      "provider_rejected"
    ],
    ["a 403 page", (r) => json(r, 403, "<html>no</html>"), "provider_error", "provider_rejected"],
    ["a 503", (r) => json(r, 503, { error: "temporarily_unavailable" }), "provider_5xx", "provider_5xx"],
    ["a 500 with invalid_grant", (r) => json(r, 500, { error: "invalid_grant" }), "provider_5xx", "provider_5xx"],
    ["form garbage", (r) => json(r, 200, "[1]"), "malformed_response", "malformed_response"],
    ["no access_token", (r) => json(r, 200, { token_type: "bearer" }), "malformed_response", "malformed_response"]
  ]
  for (const [name, answer, reason, metric] of failures) {
    oauthTest(`${name} → ${reason} (metric ${metric})`, () =>
      Effect.gen(function* () {
        const server = yield* localServer((_request, response) => answer(response))
        const error = yield* Effect.flip(refreshWith(server))
        assert.instanceOf(error, TokenRequestFailed)
        assert.strictEqual(error.reason, reason)
        assert.strictEqual(failureMetricReason(error), metric)
      })
    )
  }

  it("classifies every failure reason", () => {
    const table: ReadonlyArray<readonly [TokenRequestFailureReason, string]> = [
      ["invalid_grant", "invalid_grant"],
      ["provider_5xx", "provider_5xx"],
      ["network_error", "network_error"],
      ["timeout", "network_error"],
      ["malformed_response", "malformed_response"],
      ["invalid_client", "provider_rejected"],
      ["unauthorized_client", "provider_rejected"],
      ["invalid_scope", "provider_rejected"],
      ["provider_error", "provider_rejected"]
    ]
    for (const [reason, metric] of table) {
      assert.strictEqual(failureMetricReason(new TokenRequestFailed({ reason, detail: "x" })), metric, reason)
    }
  })

  oauthTest("a disallowed and a stalled endpoint are network errors", () =>
    Effect.gen(function* () {
      const server = yield* localServer(() => {})
      const denied = yield* Effect.flip(
        refreshTokenSet(authFor(server), client, current, yield* sendTo(server, { allowPrivateNetworks: false }), now)
      )
      assert.strictEqual(failureMetricReason(denied), "network_error")
      const stalled = yield* Effect.flip(
        refreshTokenSet(authFor(server), client, current, yield* sendTo(server, { totalMs: 200 }), now)
      )
      assert.strictEqual(stalled.reason, "timeout")
      assert.strictEqual(failureMetricReason(stalled), "network_error")
    })
  )

  oauthTest("no secret or token appears in an error, even when the provider echoes the request", () =>
    Effect.gen(function* () {
      const server = yield* localServer((request, response) =>
        json(response, 400, {
          error: "invalid_grant",
          error_description: `refresh ${refreshToken} access ${accessToken} secret ${secret}; body ${request.body.toString()}`
        })
      )
      const error = yield* Effect.flip(refreshWith(server, { client_auth: "client_secret_post" }))
      assert.strictEqual(error.reason, "invalid_grant")
      const rendered = [error.message, String(error), JSON.stringify(error)].join("\n")
      for (const value of [secret, refreshToken, accessToken]) {
        assert.notInclude(rendered, value)
        assert.notInclude(rendered, encodeURIComponent(value))
      }
      assert.include(error.message, "[redacted]")
    })
  )
})
