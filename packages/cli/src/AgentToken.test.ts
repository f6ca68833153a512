import { assert, describe, it } from "@effect/vitest"
import { Result } from "effect"
import { agentClaims, parseAllow } from "./AgentToken.ts"

describe("parseAllow", () => {
  it("reads METHODS PATH into rules", () => {
    assert.deepStrictEqual(Result.getOrThrow(parseAllow(["GET /v1/items", " GET,POST  /v1/items/* "])), [
      { methods: ["GET"], path: "/v1/items" },
      { methods: ["GET", "POST"], path: "/v1/items/*" }
    ])
    assert.deepStrictEqual(Result.getOrThrow(parseAllow([])), [])
  })

  it("refuses what a connector's agent_access would refuse", () => {
    for (const value of ["/v1/items", "get /v1/items", "GET v1/items", "GET,GET /x", "GET /a /b"]) {
      assert.isTrue(Result.isFailure(parseAllow([value])), value)
    }
  })
})

describe("agentClaims", () => {
  const base = { subject: "agent-1", issuedAt: 1_000, jti: "j", expiresInSeconds: 60 }

  it("is api-only, expiring, restricted to connections and always an agent token", () => {
    assert.deepStrictEqual(agentClaims({ ...base, namespace: "root.acme", allow: undefined }), {
      sub: "agent-1",
      iat: 1_000,
      jti: "j",
      exp: 1_060,
      aud: ["api"],
      permissions: [{ namespace: "root.acme.**", resources: ["connections"], verbs: ["get", "list", "proxy"] }],
      agent_access: {}
    })
    const narrowed = agentClaims({ ...base, namespace: undefined, allow: [{ methods: ["GET"], path: "/x" }] })
    assert.deepStrictEqual(narrowed.permissions?.[0]?.namespace, "root.**")
    assert.deepStrictEqual(narrowed.agent_access, { allow: [{ methods: ["GET"], path: "/x" }] })
  })
})
