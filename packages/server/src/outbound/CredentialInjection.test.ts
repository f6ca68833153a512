import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { ConnectorAuth, type StoredCredentials } from "@svc/domain/ConnectorAuth"
import {
  CredentialInjectionError,
  injectCredentials,
  placementProblem,
  redactionTargets
} from "./CredentialInjection.ts"

const auth = (input: unknown): ConnectorAuth => Schema.decodeUnknownSync(ConnectorAuth)(input)

const none = auth({ type: "none" })
const bearer = auth({ type: "api_key", placement: "bearer" })
const header = auth({ type: "api_key", placement: "header", header_name: "X-Api-Key", prefix: "Token " })
const headerNoPrefix = auth({ type: "api_key", placement: "header", header_name: "X-Api-Key" })
const query = auth({ type: "api_key", placement: "query", query_param: "api_key" })
const basic = auth({ type: "basic" })
const clientCredentials = auth({
  type: "oauth2",
  grant_type: "client_credentials",
  token_endpoint: "https://auth.example.com/token"
})
const authorizationCode = auth({
  type: "oauth2",
  grant_type: "authorization_code",
  token_endpoint: "https://auth.example.com/token",
  authorization_endpoint: "https://auth.example.com/authorize"
})

const apiKey: StoredCredentials = { kind: "api_key", api_key: "k3y" }
const token = (tokenType: string) => ({ access_token: "at-123", token_type: tokenType })

const request = (headers: Record<string, string> = {}, url = "https://api.example.com/v1/items?a=1&b=x%20y") => ({
  url: new URL(url),
  headers
})

describe("injectCredentials", () => {
  it("none injects nothing but still strips the caller's Authorization and X-Svc-* headers", () => {
    const result = injectCredentials(
      none,
      undefined,
      request({ Authorization: "Bearer caller", "X-Svc-Label": "a=b", "x-svc-debug": "1", Accept: "text/plain" })
    )
    assert.deepStrictEqual(result.headers, { Accept: "text/plain" })
    assert.deepStrictEqual(result.injected, { headers: [], queryParams: [] })
    assert.strictEqual(result.url.href, "https://api.example.com/v1/items?a=1&b=x%20y")
  })

  it("api_key bearer sets Authorization: Bearer <key>, replacing the caller's (any case)", () => {
    const result = injectCredentials(bearer, apiKey, request({ AUTHORIZATION: "Basic Y2FsbGVy", accept: "*/*" }))
    assert.deepStrictEqual(result.headers, { accept: "*/*", authorization: "Bearer k3y" })
    assert.deepStrictEqual(result.injected, { headers: ["authorization"], queryParams: [] })
  })

  it("api_key header sets the named header with its prefix, replacing the caller's copy in any case", () => {
    const result = injectCredentials(
      header,
      apiKey,
      request({ "x-api-key": "caller", "X-API-KEY": "caller2", Authorization: "x", "Proxy-Authorization": "y" })
    )
    assert.deepStrictEqual(result.headers, { "x-api-key": "Token k3y" })
    assert.deepStrictEqual(result.injected, { headers: ["x-api-key"], queryParams: [] })
    assert.deepStrictEqual(injectCredentials(headerNoPrefix, apiKey, request()).headers, { "x-api-key": "k3y" })
  })

  it("api_key query sets the parameter once, replacing any the caller sent, other parameters untouched", () => {
    const result = injectCredentials(
      query,
      apiKey,
      request({ Cookie: "c=1" }, "https://api.example.com/v1?api_key=caller&a=1&api%5Fkey=two&b=x%20y+z#frag")
    )
    assert.strictEqual(result.url.search, "?a=1&b=x%20y+z&api_key=k3y")
    assert.strictEqual(result.url.hash, "#frag")
    assert.deepStrictEqual(result.headers, { Cookie: "c=1" })
    assert.deepStrictEqual(result.injected, { headers: [], queryParams: ["api_key"] })
  })

  it("api_key query encodes the key", () => {
    const result = injectCredentials(query, { kind: "api_key", api_key: "a&b=c d" }, request({}, "https://h.test/"))
    assert.strictEqual(result.url.searchParams.get("api_key"), "a&b=c d")
    assert.deepStrictEqual([...result.url.searchParams.keys()], ["api_key"])
  })

  it("basic sets Authorization: Basic base64(username:password) in UTF-8", () => {
    const result = injectCredentials(basic, { kind: "basic", username: "zoë", password: "p:ss wörd" }, request())
    assert.strictEqual(result.headers.authorization, `Basic ${Buffer.from("zoë:p:ss wörd", "utf8").toString("base64")}`)
    assert.strictEqual(result.headers.authorization, "Basic em/DqzpwOnNzIHfDtnJk")
    assert.deepStrictEqual(result.injected, { headers: ["authorization"], queryParams: [] })
  })

  it("oauth2 sets Authorization from the token; bearer in any case becomes Bearer", () => {
    const stored: StoredCredentials = { kind: "oauth2_client_credentials", client_id: "id", token: token("bearer") }
    assert.strictEqual(injectCredentials(clientCredentials, stored, request()).headers.authorization, "Bearer at-123")
    const code: StoredCredentials = { kind: "oauth2_authorization_code", token: token("BEARER") }
    const result = injectCredentials(authorizationCode, code, request({ authorization: "Bearer caller" }))
    assert.deepStrictEqual(result.headers, { authorization: "Bearer at-123" })
    assert.deepStrictEqual(result.injected, { headers: ["authorization"], queryParams: [] })
    const odd: StoredCredentials = { kind: "oauth2_authorization_code", token: token("bad type") }
    assert.strictEqual(injectCredentials(authorizationCode, odd, request()).headers.authorization, "Bearer at-123")
  })

  it("does not mutate its input", () => {
    const input = request({ Authorization: "caller", "X-Svc-Label": "a=b" }, "https://h.test/?api_key=old")
    const before = { href: input.url.href, headers: { ...input.headers } }
    const result = injectCredentials(query, apiKey, input)
    assert.strictEqual(input.url.href, before.href)
    assert.deepStrictEqual(input.headers, before.headers)
    assert.notStrictEqual(result.url, input.url)
    const viaHeader = injectCredentials(bearer, apiKey, input)
    assert.notStrictEqual(viaHeader.url, input.url)
    assert.notStrictEqual(viaHeader.headers, input.headers)
  })

  it.each([
    [bearer, undefined, "credentials_missing"],
    [bearer, { kind: "basic", username: "u", password: "p" }, "credentials_kind_mismatch"],
    [basic, apiKey, "credentials_kind_mismatch"],
    [clientCredentials, { kind: "oauth2_authorization_code", token: token("bearer") }, "credentials_kind_mismatch"],
    [authorizationCode, undefined, "credentials_missing"]
  ] as const)("throws CredentialInjectionError on a credential mismatch (%#)", (method, credentials, reason) => {
    try {
      injectCredentials(method, credentials, request())
      assert.fail("expected a CredentialInjectionError")
    } catch (error) {
      assert.instanceOf(error, CredentialInjectionError)
      assert.strictEqual(error.reason, reason)
    }
  })

  it("refuses a key that would split a header, without echoing it", () => {
    try {
      injectCredentials(bearer, { kind: "api_key", api_key: "abc\r\nx-evil: 1" }, request())
      assert.fail("expected a CredentialInjectionError")
    } catch (error) {
      assert.instanceOf(error, CredentialInjectionError)
      assert.strictEqual(error.reason, "credential_not_header_safe")
      assert.notInclude(error.message, "abc")
    }
  })
})

describe("redactionTargets", () => {
  it.each([
    [none, { headers: [], queryParams: [] }],
    [bearer, { headers: ["authorization"], queryParams: [] }],
    [header, { headers: ["x-api-key"], queryParams: [] }],
    [query, { headers: [], queryParams: ["api_key"] }],
    [basic, { headers: ["authorization"], queryParams: [] }],
    [clientCredentials, { headers: ["authorization"], queryParams: [] }],
    [authorizationCode, { headers: ["authorization"], queryParams: [] }]
  ] as const)("%j", (method, expected) => {
    assert.deepStrictEqual(redactionTargets(method), expected)
  })
})

describe("placementProblem", () => {
  it("refuses, for header and bearer placement only, exactly the keys injection would refuse", () => {
    for (const key of ["k\r\nX-Evil: 1", "k\n", "k\u0000", "k\u001b", "k\u007f", "€uro"]) {
      const stored: StoredCredentials = { kind: "api_key", api_key: key }
      for (const method of [bearer, header, headerNoPrefix]) {
        const problem = placementProblem(method, stored)
        assert.isDefined(problem, JSON.stringify(key))
        assert.notInclude(problem, key)
        assert.throws(() => injectCredentials(method, stored, request()), CredentialInjectionError)
      }
      assert.strictEqual(placementProblem(query, stored), undefined)
    }
    for (const key of ["k3y", "tab\tinside", "latin1-ü"]) {
      assert.strictEqual(placementProblem(header, { kind: "api_key", api_key: key }), undefined)
    }
    assert.isDefined(placementProblem(basic, apiKey))
  })
})
