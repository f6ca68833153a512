/** Token revocation (RFC 7009): the request on the wire, success whatever the body, failures, no leaked secret. */
import type { ServerResponse } from "node:http"
import { assert, describe } from "@effect/vitest"
import { Effect, Exit, Tracer } from "effect"
import { type ExportedSpan, makeTracer, nowNanos } from "../telemetry/Tracing.ts"
import type { ClientAuthMethod } from "@svc/domain/ConnectorAuth"
import { type LocalServer, localServer } from "../outbound/testing/LocalServer.ts"
import { revokeToken } from "./Revocation.ts"
import { formOf, json, oauthTest, sendTo } from "./testing/OAuthTestKit.ts"
import type { TokenRequestFailureReason } from "./TokenRequestFailed.ts"

const secret = "cl1ent-s3cret/+&="
const token = "rt-to-revoke/+&="
const client = { client_id: "app-1", client_secret: secret }

const revokeWith = (
  server: LocalServer,
  method: ClientAuthMethod = "client_secret_basic",
  tokenTypeHint: "refresh_token" | "access_token" = "refresh_token"
) =>
  Effect.gen(function* () {
    return yield* revokeToken(
      `${server.origin}/revoke`,
      method,
      client,
      { token, tokenTypeHint },
      yield* sendTo(server)
    )
  })

describe("revokeToken", () => {
  oauthTest("starts no span of its own: the caller's oauth2.revoke is the one span of a revocation", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => json(response, 200, ""))
      const pushed: Array<ExportedSpan> = []
      const tracer = makeTracer({ push: (span) => pushed.push(span) }, 1)
      const revoke = tracer.start("oauth2.revoke", "internal", undefined)
      yield* revokeWith(server).pipe(
        Effect.provideService(Tracer.ParentSpan, revoke),
        Effect.provideService(Tracer.Tracer, tracer)
      )
      revoke.end(nowNanos(), Exit.void)
      assert.deepStrictEqual(
        pushed.map((s) => s.name),
        ["oauth2.revoke"]
      )
    })
  )

  oauthTest("POSTs token and token_type_hint with each client authentication method", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => json(response, 200, ""))
      yield* revokeWith(server, "client_secret_basic")
      yield* revokeWith(server, "client_secret_post", "access_token")
      yield* revokeWith(server, "none")
      const [basic, post, none] = server.requests
      assert.strictEqual(basic?.method, "POST")
      assert.strictEqual(basic?.url, "/revoke")
      assert.strictEqual(basic?.headers["content-type"], "application/x-www-form-urlencoded")
      assert.strictEqual(
        basic?.headers.authorization,
        `Basic ${Buffer.from("app-1:cl1ent-s3cret%2F%2B%26%3D").toString("base64")}`
      )
      assert.strictEqual(basic?.body.toString(), "token=rt-to-revoke%2F%2B%26%3D&token_type_hint=refresh_token")
      assert.isUndefined(post?.headers.authorization)
      assert.deepStrictEqual(formOf(post), {
        token,
        token_type_hint: "access_token",
        client_id: "app-1",
        client_secret: secret
      })
      assert.isUndefined(none?.headers.authorization)
      assert.deepStrictEqual(formOf(none), { token, token_type_hint: "refresh_token", client_id: "app-1" })
    })
  )

  oauthTest("200 is success whatever the body", () =>
    Effect.gen(function* () {
      const bodies = ["<html>ok</html>", { error: "invalid_token" }, ""]
      let answered = 0
      const server = yield* localServer((_request, response) => json(response, 200, bodies[answered++] ?? ""))
      yield* revokeWith(server)
      yield* revokeWith(server)
      yield* revokeWith(server)
      assert.strictEqual(server.requests.length, 3)
    })
  )

  const failures: ReadonlyArray<
    readonly [string, (response: ServerResponse) => void, TokenRequestFailureReason, number]
  > = [
    ["a 503", (r) => json(r, 503, { error: "temporarily_unavailable" }), "provider_5xx", 503],
    ["a 500 page", (r) => json(r, 500, "<html>oops</html>"), "provider_5xx", 500],
    ["invalid_client", (r) => json(r, 400, { error: "invalid_client" }), "invalid_client", 400],
    ["unauthorized_client", (r) => json(r, 400, { error: "unauthorized_client" }), "unauthorized_client", 400],
    ["unsupported_token_type", (r) => json(r, 400, { error: "unsupported_token_type" }), "provider_error", 400],
    ["a 400 without a code", (r) => json(r, 400, ""), "provider_error", 400],
    ["a bare 401", (r) => json(r, 401, ""), "invalid_client", 401]
  ]
  for (const [name, answer, reason, status] of failures) {
    oauthTest(`${name} → ${reason}`, () =>
      Effect.gen(function* () {
        const server = yield* localServer((_request, response) => answer(response))
        const error = yield* Effect.flip(revokeWith(server))
        assert.strictEqual(error.reason, reason)
        assert.strictEqual(error.status, status)
      })
    )
  }

  oauthTest("disallowed and stalled endpoints are network_error and timeout; a missing secret sends nothing", () =>
    Effect.gen(function* () {
      const server = yield* localServer(() => {})
      const target = `${server.origin}/revoke`
      const hint = { token, tokenTypeHint: "refresh_token" } as const
      const denied = yield* Effect.flip(
        revokeToken(target, "none", client, hint, yield* sendTo(server, { allowPrivateNetworks: false }))
      )
      assert.strictEqual(denied.reason, "network_error")
      assert.strictEqual(server.requests.length, 0)
      const missing = yield* Effect.flip(
        revokeToken(target, "client_secret_post", { client_id: "app-1" }, hint, yield* sendTo(server))
      )
      assert.strictEqual(missing.reason, "invalid_client")
      assert.strictEqual(server.requests.length, 0)
      const stalled = yield* Effect.flip(
        revokeToken(target, "none", client, hint, yield* sendTo(server, { totalMs: 200 }))
      )
      assert.strictEqual(stalled.reason, "timeout")
    })
  )

  oauthTest("neither the token nor the client secret appears in an error", () =>
    Effect.gen(function* () {
      const server = yield* localServer((request, response) =>
        json(response, 400, {
          error: `invalid_request ${token}`,
          error_description: `token ${token} secret ${secret}; body ${request.body.toString()}`
        })
      )
      const error = yield* Effect.flip(revokeWith(server, "client_secret_post"))
      assert.strictEqual(error.reason, "provider_error")
      const rendered = [error.message, String(error), JSON.stringify(error)].join("\n")
      for (const value of [secret, token]) {
        assert.notInclude(rendered, value)
        assert.notInclude(rendered, encodeURIComponent(value))
      }
      assert.include(error.message, "[redacted]")
    })
  )
})
