/** Client authentication on the wire: each method's exact headers and body, as the endpoint receives them. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { localServer } from "../outbound/testing/LocalServer.ts"
import { clientAuthenticatedForm, clientAuthentication, formEncode } from "./ClientAuth.ts"
import { formOf, json, oauthTest, sendTo } from "./testing/OAuthTestKit.ts"
import { TokenRequestFailed } from "./TokenRequestFailed.ts"

const client = { client_id: "client id:1", client_secret: "sup3r-s3cret/+&=" }
const params: ReadonlyArray<readonly [string, string]> = [
  ["grant_type", "authorization_code"],
  ["code", "c/1"]
]
const extra = { audience: "api", grant_type: "password", code: "other", client_id: "evil", client_secret: "evil" }

describe("clientAuthenticatedForm", () => {
  oauthTest("client_secret_basic: form-encoded id and secret in Basic, nothing in the body", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => json(response, 200, {}))
      const form = clientAuthenticatedForm(`${server.origin}/token?x=1`, "client_secret_basic", client, params, extra)
      if (form instanceof TokenRequestFailed) return assert.fail(form.message)
      yield* (yield* sendTo(server))(form.request)
      const request = server.requests[0]
      assert.strictEqual(request?.method, "POST")
      assert.strictEqual(request?.url, "/token?x=1")
      assert.strictEqual(request?.headers["content-type"], "application/x-www-form-urlencoded")
      assert.strictEqual(request?.headers.accept, "application/json")
      const credential = Buffer.from("client+id%3A1:sup3r-s3cret%2F%2B%26%3D", "utf8").toString("base64")
      assert.strictEqual(request?.headers.authorization, `Basic ${credential}`)
      assert.strictEqual(request?.body.toString(), "grant_type=authorization_code&code=c%2F1&audience=api")
      assert.includeMembers([...form.secrets], [client.client_secret, formEncode(client.client_secret), credential])
    })
  )

  oauthTest("client_secret_post: client_id and client_secret in the body, no Authorization", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => json(response, 200, {}))
      const form = clientAuthenticatedForm(`${server.origin}/token`, "client_secret_post", client, params, extra)
      if (form instanceof TokenRequestFailed) return assert.fail(form.message)
      yield* (yield* sendTo(server))(form.request)
      const request = server.requests[0]
      assert.isUndefined(request?.headers.authorization)
      assert.strictEqual(
        request?.body.toString(),
        "grant_type=authorization_code&code=c%2F1&client_id=client+id%3A1&client_secret=sup3r-s3cret%2F%2B%26%3D&audience=api"
      )
    })
  )

  oauthTest("none: client_id in the body only, even when a secret is configured", () =>
    Effect.gen(function* () {
      const server = yield* localServer((_request, response) => json(response, 200, {}))
      const form = clientAuthenticatedForm(`${server.origin}/token`, "none", client, params, extra)
      if (form instanceof TokenRequestFailed) return assert.fail(form.message)
      yield* (yield* sendTo(server))(form.request)
      const request = server.requests[0]
      assert.isUndefined(request?.headers.authorization)
      assert.deepStrictEqual(formOf(request), {
        grant_type: "authorization_code",
        code: "c/1",
        client_id: "client id:1",
        audience: "api"
      })
      assert.deepStrictEqual(form.secrets, [])
    })
  )

  it("a method needing a secret without one is invalid_client", () => {
    for (const method of ["client_secret_basic", "client_secret_post"] as const) {
      for (const input of [{ client_id: "a" }, { client_id: "a", client_secret: "" }]) {
        const result = clientAuthentication(method, input)
        assert.instanceOf(result, TokenRequestFailed)
        if (result instanceof TokenRequestFailed) {
          assert.strictEqual(result.reason, "invalid_client")
          assert.isUndefined(result.status)
        }
      }
    }
    assert.notInstanceOf(clientAuthentication("none", { client_id: "a" }), TokenRequestFailed)
  })
})
