import { assert, describe, it } from "@effect/vitest"
import { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { BadRequest, Forbidden } from "@svc/domain/Errors"
import { makeId } from "@svc/domain/Ids"
import { ConnectionRow } from "@svc/sql/Rows"
import { Schema } from "effect"
import { redactionTargets } from "../outbound/CredentialInjection.ts"
import { upstreamOptions } from "../outbound/OutboundOptions.ts"
import { agentBodyCap, agentRequest, agentResult } from "./AgentCall.ts"
import { redactedMarker } from "./AgentRedaction.ts"
import type { EnvelopeRequest } from "./EnvelopeRoute.ts"
import type { ProxyTarget } from "./ProxyTargets.ts"

const secret = "sk_live_0123456789abcdef"

const targetWith = (agent_access: unknown): ProxyTarget => {
  const definition = Schema.decodeUnknownSync(ConnectorDefinition)({
    type: "demo",
    auth: { type: "api_key", placement: "bearer" },
    proxy: { allowed_hosts: ["api.example.com"] },
    ...(agent_access === undefined ? {} : { agent_access })
  })
  const row = Schema.decodeUnknownSync(ConnectionRow)({
    id: makeId("cxn"),
    namespace: "root.agents",
    name: "agents",
    labels: {},
    annotations: {},
    createdAt: new Date(),
    updatedAt: new Date(),
    connectorId: makeId("cxr"),
    connectorVersion: 1,
    state: "configured",
    healthState: "healthy",
    setupStepId: null,
    configurationEnc: null,
    credentialsEnc: null,
    legacyConfiguration: null
  })
  return {
    row,
    connectorLabels: {},
    definition,
    credentials: { kind: "api_key", api_key: secret },
    send: upstreamOptions(definition, false),
    redact: redactionTargets(definition.auth)
  }
}

const target = targetWith({
  allow: [
    { methods: ["GET"], path: "/v1/items/*" },
    { methods: ["POST"], path: "/v1/items" }
  ]
})

const request = (result: ReturnType<typeof agentRequest>): EnvelopeRequest => {
  if (result instanceof BadRequest || result instanceof Forbidden) throw new Error(`refused: ${result.error}`)
  return result
}

const refused = (result: ReturnType<typeof agentRequest>) =>
  result instanceof BadRequest || result instanceof Forbidden ? result.code : "accepted"

describe("agentRequest", () => {
  it("builds the exchange's envelope request on the connector's origin, marked via mcp", () => {
    const built = request(
      agentRequest(target, undefined, {
        method: "post",
        path: "/v1/items",
        query: { tag: ["a", "b"], q: "x y" },
        headers: { "X-Trace": "1", Authorization: "Bearer agent", "x-svc-label": "a=b" },
        body: { name: "n" }
      })
    )
    assert.strictEqual(built.via, "mcp")
    assert.strictEqual(built.method, "POST")
    assert.strictEqual(built.url.href, "https://api.example.com/v1/items?tag=a&tag=b&q=x+y")
    assert.deepStrictEqual(built.headers, { "x-trace": "1", "content-type": "application/json" })
    assert.strictEqual(Buffer.from(built.payload ?? new Uint8Array()).toString(), '{"name":"n"}')
  })

  it("checks the rules on the proxy's one path form", () => {
    // Percent-encoded unreserved characters are decoded and dot segments removed first.
    assert.strictEqual(
      request(agentRequest(target, undefined, { method: "GET", path: "/v1/%69tems/7" })).url.pathname,
      "/v1/items/7"
    )
    assert.strictEqual(
      refused(agentRequest(target, undefined, { method: "GET", path: "/v1/items/7/../../admin" })),
      "agent_access_denied"
    )
    assert.strictEqual(
      refused(agentRequest(target, undefined, { method: "GET", path: "/v1/items/%2e%2e/%2e%2e/x" })),
      "agent_access_denied"
    )
    assert.strictEqual(
      refused(agentRequest(target, undefined, { method: "GET", path: "/v1/items/a%2Fb" })),
      "agent_access_denied"
    )
    assert.strictEqual(
      refused(agentRequest(target, undefined, { method: "DELETE", path: "/v1/items/7" })),
      "agent_access_denied"
    )
  })

  it("refuses a path that is not one, before any rule", () => {
    for (const path of [
      "v1/items/7",
      "//evil.example/v1/items/7",
      // An empty segment or a `;` parameter: an upstream merging slashes or reading `..;` as `..`
      // would act on another path than the one matched.
      "/v1/items//7",
      "/v1/items/..;/admin",
      "/v1/items/7%3Bx",
      "/v1/items/7?x=1",
      "/v1/items/7#f",
      "/v1/items/ 7"
    ]) {
      assert.strictEqual(refused(agentRequest(target, undefined, { method: "GET", path })), "invalid_request", path)
    }
  })

  it("refuses method overrides and URL rewrites in headers or the query", () => {
    for (const headers of [
      { "X-HTTP-Method-Override": "DELETE" },
      { "x-http-method": "DELETE" },
      { "x-method-override": "DELETE" },
      { "x-original-url": "/admin/users" },
      { "x-rewrite-url": "/admin/users" },
      { "x-forwarded-prefix": "/admin" },
      { forwarded: "host=admin.example.com" }
    ]) {
      assert.strictEqual(
        refused(agentRequest(target, undefined, { method: "GET", path: "/v1/items/7", headers })),
        "agent_access_denied",
        JSON.stringify(headers)
      )
    }
    assert.strictEqual(
      refused(agentRequest(target, undefined, { method: "POST", path: "/v1/items", query: { _method: "DELETE" } })),
      "agent_access_denied"
    )
    assert.strictEqual(
      refused(agentRequest(target, undefined, { method: "GET", path: "/v1/items/7", headers: { accept: "a/b" } })),
      "accepted"
    )
  })

  it("refuses every call through a connector without agent_access and narrows by the token's claim", () => {
    assert.strictEqual(
      refused(agentRequest(targetWith(undefined), undefined, { method: "GET", path: "/v1/items/7" })),
      "agent_access_denied"
    )
    assert.strictEqual(
      refused(agentRequest(targetWith({ allow: [] }), undefined, { method: "GET", path: "/v1/items/7" })),
      "agent_access_denied"
    )
    const claim = { allow: [{ methods: ["GET"], path: "/v1/items/7" }] }
    assert.strictEqual(refused(agentRequest(target, claim, { method: "GET", path: "/v1/items/7" })), "accepted")
    assert.strictEqual(
      refused(agentRequest(target, claim, { method: "GET", path: "/v1/items/8" })),
      "agent_access_denied"
    )
  })
})

describe("agentResult", () => {
  const answer = (body: string | Uint8Array, headers: Record<string, string | ReadonlyArray<string>> = {}) => ({
    status: 200,
    headers,
    body: typeof body === "string" ? Buffer.from(body) : body
  })

  it("drops svc's own and cookie headers and redacts the credential anywhere", () => {
    const result = agentResult(
      [target],
      answer(`{"echo":"Bearer ${secret}"}`, {
        "content-type": "application/json",
        "x-svc-ratelimited": "true",
        "set-cookie": ["a=1", "b=2"],
        "x-echo": `Bearer ${secret}`,
        vary: ["a", "b"]
      })
    )
    assert.deepStrictEqual(result.headers, {
      "content-type": "application/json",
      "x-echo": `Bearer ${redactedMarker}`,
      vary: "a, b"
    })
    assert.deepStrictEqual(result.json, { echo: `Bearer ${redactedMarker}` })
    assert.isFalse(JSON.stringify(result).includes(secret))
  })

  it("redacts a credential echoed URL-encoded, form-encoded or JSON-escaped, and the one a refresh renewed", () => {
    const key = "ab+cd/ef==gh 12"
    const keyed: ProxyTarget = { ...target, credentials: { kind: "api_key", api_key: key } }
    const renewed: ProxyTarget = { ...target, credentials: { kind: "api_key", api_key: "renewed_0123456789" } }
    const text = [
      `next=https://x.example/?key=${encodeURIComponent(key)}`,
      `form=${encodeURIComponent(key).replace(/%20/g, "+")}`,
      `lower=${encodeURIComponent(key).replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase())}`,
      "renewed_0123456789"
    ].join("\n")
    const plain = agentResult([keyed, renewed], answer(text, { location: `/x?key=${encodeURIComponent(key)}` }))
    assert.isFalse(JSON.stringify(plain).includes("renewed_0123456789"))
    assert.isFalse(JSON.stringify(plain).includes(encodeURIComponent(key).slice(0, 8)))
    assert.strictEqual(plain.headers.location, `/x?key=${redactedMarker}`)
    // PHP writes `\/`, .NET `\u002B`: the text hides the value, JSON.parse gives it back.
    for (const escaped of [key.replace(/\//g, "\\/"), key.replace(/\+/g, "\\u002B"), key.replace(/\+/g, "\\u002b")]) {
      const result = agentResult([keyed], answer(`{"token":"${escaped}"}`, { "content-type": "application/json" }))
      assert.deepStrictEqual(result.json, { token: redactedMarker }, escaped)
    }
  })

  it("caps the body with a marker, and never leaves part of a credential at the cut", () => {
    const body = `${"x".repeat(agentBodyCap - 10)}${secret}${"y".repeat(100)}`
    const result = agentResult([target], answer(body, { "content-type": "application/json" }))
    assert.isTrue(result.truncated)
    assert.strictEqual(result.size, Buffer.byteLength(body))
    assert.isUndefined(result.json)
    assert.isFalse((result.text ?? "").includes(secret.slice(0, 10)))
    assert.match(result.text ?? "", /\n\[truncated by svc: 65536 of \d+ bytes shown\]$/)
  })

  it("returns text, describes a binary body, and returns nothing for an empty one", () => {
    assert.deepStrictEqual(agentResult([target], answer("plain")), {
      status: 200,
      headers: {},
      text: "plain",
      size: 5,
      truncated: false
    })
    const binary = agentResult([target], answer(new Uint8Array(1000).map((_, i) => 0x80 + (i % 64))))
    assert.strictEqual(binary.text, "[binary body of 1000 bytes not shown]")
    assert.deepStrictEqual(agentResult([target], answer("")), { status: 200, headers: {}, size: 0, truncated: false })
  })
})
