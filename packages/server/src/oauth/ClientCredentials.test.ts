import type { ServerResponse } from "node:http"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema, type Scope } from "effect"
import { type ClientCredentialsInput, OAuth2ClientCredentialsAuth } from "@svc/domain/ConnectorAuth"
import { Outbound, type OutboundRequest } from "../outbound/Outbound.ts"
import { type LocalServer, localServer, type RecordedRequest } from "../outbound/testing/LocalServer.ts"
import { fetchClientCredentialsToken, TokenRequestFailed } from "./ClientCredentials.ts"

const secret = "sup3r-s3cret/+&="
const clientId = "client id:1"
const now = 1_700_000_000_000

const authFor = (server: LocalServer, extra: Record<string, unknown> = {}) =>
  Schema.decodeUnknownSync(OAuth2ClientCredentialsAuth)({
    type: "oauth2",
    grant_type: "client_credentials",
    token_endpoint: `${server.origin}/oauth/token`,
    ...extra
  })

const json = (response: ServerResponse, status: number, body: unknown) => {
  response.writeHead(status, { "content-type": "application/json" })
  response.end(typeof body === "string" ? body : JSON.stringify(body))
}

const ok = (response: ServerResponse) =>
  json(response, 200, { access_token: "at-1", token_type: "bearer", expires_in: 3600, scope: "read write" })

const fetchWith = (
  server: LocalServer,
  extra: Record<string, unknown> = {},
  input: ClientCredentialsInput = { client_id: clientId, client_secret: secret }
) =>
  Effect.gen(function* () {
    const outbound = yield* Outbound
    const send = (request: OutboundRequest) =>
      outbound.send(request, {
        policy: { allowedHosts: [`127.0.0.1:${server.port}`], allowPrivateNetworks: true },
        timeouts: { connectMs: 5_000, firstByteMs: 5_000, totalMs: 10_000 },
        maxResponseBytes: 64 * 1024
      })
    return yield* fetchClientCredentialsToken(authFor(server, extra), input, send, now)
  })

const test = (name: string, body: () => Effect.Effect<void, unknown, Outbound | Scope.Scope>) =>
  it.live(name, () => body().pipe(Effect.scoped, Effect.provide(Outbound.layer)))

const form = (request: RecordedRequest | undefined) => Object.fromEntries(new URLSearchParams(request?.body.toString()))

describe("fetchClientCredentialsToken", () => {
  test("client_secret_basic: Basic base64(urlencode(id):urlencode(secret)), grant and scope in the body", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => ok(response))
      const token = yield* fetchWith(server, {
        scopes: [{ name: "read" }, { name: "write", required: true }],
        token_params: { audience: "https://api.example.com", grant_type: "password" }
      })
      assert.deepStrictEqual(token, {
        access_token: "at-1",
        token_type: "bearer",
        expires_at: now + 3_600_000,
        scope: "read write",
        obtained_at: now
      })
      const request = server.requests[0]
      assert.strictEqual(request?.method, "POST")
      assert.strictEqual(request?.url, "/oauth/token")
      assert.strictEqual(request?.headers["content-type"], "application/x-www-form-urlencoded")
      assert.strictEqual(request?.headers.accept, "application/json")
      const expected = Buffer.from("client+id%3A1:sup3r-s3cret%2F%2B%26%3D", "utf8").toString("base64")
      assert.strictEqual(request?.headers.authorization, `Basic ${expected}`)
      assert.deepStrictEqual(form(request), {
        grant_type: "client_credentials",
        scope: "read write",
        audience: "https://api.example.com"
      })
    }))

  test("client_secret_post: client_id and client_secret in the body, no Authorization", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => ok(response))
      yield* fetchWith(server, {
        client_auth: "client_secret_post",
        scopes: [{ name: "a" }, { name: "b" }],
        scope_separator: ","
      })
      const request = server.requests[0]
      assert.isUndefined(request?.headers.authorization)
      assert.deepStrictEqual(form(request), {
        grant_type: "client_credentials",
        scope: "a,b",
        client_id: clientId,
        client_secret: secret
      })
    }))

  test("none: client_id only, no scope when none are defined", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => ok(response))
      yield* fetchWith(server, { client_auth: "none" }, { client_id: clientId, client_secret: secret })
      const request = server.requests[0]
      assert.isUndefined(request?.headers.authorization)
      assert.deepStrictEqual(form(request), { grant_type: "client_credentials", client_id: clientId })
    }))

  test("accepts a form-encoded response and clamps nonsense lifetimes", () =>
    Effect.gen(function* () {
      const server = yield* localServer((request, response) => {
        response.writeHead(200, { "content-type": "application/x-www-form-urlencoded; charset=utf-8" })
        const lifetime = request.url?.includes("huge") ? "99999999999" : request.url?.includes("neg") ? "-5" : "60"
        response.end(`access_token=gho_abc&token_type=bearer&scope=repo%2Cgist&expires_in=${lifetime}`)
      })
      const token = yield* fetchWith(server)
      assert.deepStrictEqual(token, {
        access_token: "gho_abc",
        token_type: "bearer",
        scope: "repo,gist",
        expires_at: now + 60_000,
        obtained_at: now
      })
      const huge = yield* fetchWith(server, { token_endpoint: `${server.origin}/huge` })
      assert.strictEqual(huge.expires_at, now + 365 * 24 * 3600 * 1000)
      const negative = yield* fetchWith(server, { token_endpoint: `${server.origin}/neg` })
      assert.isUndefined(negative.expires_at)
    }))

  const failures: ReadonlyArray<readonly [string, (response: ServerResponse) => void, string, number | undefined]> = [
    [
      "invalid_client",
      (r) => json(r, 401, { error: "invalid_client", error_description: "bad client" }),
      "invalid_client",
      401
    ],
    ["401 without a body", (r) => json(r, 401, ""), "invalid_client", 401],
    ["invalid_grant", (r) => json(r, 400, { error: "invalid_grant" }), "invalid_grant", 400],
    ["invalid_scope", (r) => json(r, 400, { error: "invalid_scope" }), "invalid_scope", 400],
    ["unauthorized_client", (r) => json(r, 400, { error: "unauthorized_client" }), "unauthorized_client", 400],
    ["unsupported_grant_type", (r) => json(r, 400, { error: "unsupported_grant_type" }), "provider_error", 400],
    ["a 403 page", (r) => json(r, 403, "<html>no</html>"), "provider_error", 403],
    ["an error in a 200", (r) => json(r, 200, { error: "invalid_client" }), "invalid_client", 200],
    ["a 503", (r) => json(r, 503, { error: "temporarily_unavailable" }), "provider_5xx", 503],
    ["malformed JSON", (r) => json(r, 200, "{not json"), "malformed_response", 200],
    ["a JSON array", (r) => json(r, 200, "[]"), "malformed_response", 200],
    ["no access_token", (r) => json(r, 200, { token_type: "bearer" }), "malformed_response", 200],
    ["no token_type", (r) => json(r, 200, { access_token: "x" }), "malformed_response", 200],
    [
      "a missing required scope",
      (r) => json(r, 200, { access_token: "x", token_type: "bearer", scope: "read" }),
      "invalid_scope",
      200
    ],
    [
      "a redirect",
      (r) => {
        r.writeHead(302, { location: "http://127.0.0.1:1/elsewhere" })
        r.end()
      },
      "provider_error",
      302
    ]
  ]
  for (const [name, answer, reason, status] of failures) {
    test(`${name} → ${reason}`, () =>
      Effect.gen(function* () {
        const server = yield* localServer((_request, response) => answer(response))
        const error = yield* Effect.flip(
          fetchWith(server, { scopes: [{ name: "read" }, { name: "write", required: true }] })
        )
        assert.instanceOf(error, TokenRequestFailed)
        assert.strictEqual(error.reason, reason)
        assert.strictEqual(error.status, status)
      }))
  }

  test("unreachable and disallowed endpoints are network errors", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => ok(response))
      const outbound = yield* Outbound
      const denied = yield* Effect.flip(
        fetchClientCredentialsToken(
          authFor(server),
          { client_id: clientId, client_secret: secret },
          (request) =>
            outbound.send(request, {
              policy: { allowedHosts: [`127.0.0.1:${server.port}`], allowPrivateNetworks: false },
              timeouts: { connectMs: 1_000, firstByteMs: 1_000, totalMs: 1_000 },
              maxResponseBytes: 1024
            }),
          now
        )
      )
      assert.strictEqual(denied.reason, "network_error")
      assert.strictEqual(server.requests.length, 0)
    }))

  test("the client secret and tokens never appear in an error, even when the provider echoes them", () =>
    Effect.gen(function* () {
      const server = yield* localServer((request, response) =>
        json(response, 400, {
          error: `invalid_client ${secret}`,
          error_description: `client ${clientId} secret ${secret} is wrong; body was ${request.body.toString()}\r\n${"x".repeat(500)}`
        })
      )
      const error = yield* Effect.flip(fetchWith(server, { client_auth: "client_secret_post" }))
      const rendered = [error.message, String(error), JSON.stringify(error), error.detail].join("\n")
      assert.notInclude(rendered, secret)
      assert.notInclude(rendered, encodeURIComponent(secret))
      assert.notInclude(rendered, "\r\n")
      assert.include(error.message, "[redacted]")
      assert.isAtMost(error.detail.length, 420)
      const missing = yield* Effect.flip(fetchWith(server, {}, { client_id: clientId }))
      assert.strictEqual(missing.reason, "invalid_client")
    }))
})
