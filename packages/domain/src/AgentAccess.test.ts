import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Schema } from "effect"
import { AgentAccess, type AgentAccessClaim, agentOrigin, agentRefusal } from "./AgentAccess.ts"
import { TokenClaims } from "./Auth.ts"
import { decodeConnectorDefinition, definitionParseOptions } from "./ConnectorDefinition.ts"
import { issueDetails } from "./Errors.ts"

const decode = (input: unknown) => Schema.decodeUnknownExit(AgentAccess)(input, definitionParseOptions)

const problems = (input: unknown) => {
  const exit = decode(input)
  if (Exit.isSuccess(exit)) return []
  const reason = exit.cause.reasons[0]
  return reason?._tag === "Fail" ? issueDetails(reason.error.issue).map((d) => d.field) : []
}

const access: AgentAccess = {
  base_url: "https://api.example.com",
  allow: [
    { methods: ["GET"], path: "/v1/items" },
    { methods: ["GET", "POST"], path: "/v1/items/*" },
    { methods: ["GET"], path: "/v1/users/?/profile" }
  ]
}

describe("AgentAccess", () => {
  it("validates rules like a path_match glob and methods like a rule's methods", () => {
    assert.deepStrictEqual(problems(access), [])
    assert.deepStrictEqual(problems({ allow: [{ methods: ["get"], path: "/x" }] }), ["allow[0].methods[0]"])
    assert.deepStrictEqual(problems({ allow: [{ methods: [], path: "/x" }] }), ["allow[0].methods"])
    assert.deepStrictEqual(problems({ allow: [{ methods: ["GET", "GET"], path: "/x" }] }), ["allow[0].methods[1]"])
    assert.deepStrictEqual(problems({ allow: [{ methods: ["GET"], path: "x/*" }] }), ["allow[0].path"])
    assert.deepStrictEqual(problems({ allow: [{ methods: ["GET"], path: `/${"a".repeat(1024)}` }] }), ["allow[0].path"])
    assert.deepStrictEqual(problems({ allow: [{ methods: ["GET"], path: "/x", extra: 1 }] }), ["allow[0].extra"])
    assert.deepStrictEqual(problems({ base_url: "https://api.example.com/v1", allow: [] }), ["base_url"])
    assert.deepStrictEqual(problems({ base_url: "https://u:p@api.example.com", allow: [] }), ["base_url"])
    assert.deepStrictEqual(problems({ base_url: "ftp://api.example.com", allow: [] }), ["base_url"])
  })

  it("allows exactly what a rule matches; * and ? never cross /", () => {
    assert.strictEqual(agentRefusal(access, undefined, "GET", "/v1/items"), undefined)
    assert.strictEqual(agentRefusal(access, undefined, "POST", "/v1/items/42"), undefined)
    assert.strictEqual(agentRefusal(access, undefined, "GET", "/v1/users/7/profile"), undefined)
    assert.match(agentRefusal(access, undefined, "POST", "/v1/items") ?? "", /connector's agent_access/)
    assert.match(agentRefusal(access, undefined, "GET", "/v1/items/42/comments") ?? "", /not allowed/)
    assert.match(agentRefusal(access, undefined, "GET", "/v1/users/77/profile") ?? "", /not allowed/)
    assert.match(agentRefusal(access, undefined, "DELETE", "/v1/items/42") ?? "", /not allowed/)
    // As in a path_match glob, * also matches an empty segment.
    assert.strictEqual(agentRefusal(access, undefined, "GET", "/v1/items/"), undefined)
  })

  it("refuses an escaped separator the upstream could decode", () => {
    assert.match(agentRefusal(access, undefined, "GET", "/v1/items/a%2Fb") ?? "", /escaped/)
    assert.match(agentRefusal(access, undefined, "GET", "/v1/items/a%5cb") ?? "", /escaped/)
  })

  it("absent or empty agent_access refuses everything", () => {
    assert.match(agentRefusal(undefined, undefined, "GET", "/v1/items") ?? "", /does not allow agent access/)
    assert.match(agentRefusal({ allow: [] }, undefined, "GET", "/v1/items") ?? "", /does not allow agent access/)
  })

  it("a token's claim narrows: a call must match the connector and the claim", () => {
    const claim: AgentAccessClaim = { allow: [{ methods: ["GET", "DELETE"], path: "/v1/items/*" }] }
    assert.strictEqual(agentRefusal(access, claim, "GET", "/v1/items/1"), undefined)
    assert.match(agentRefusal(access, claim, "GET", "/v1/items") ?? "", /token's agent_access/)
    assert.match(agentRefusal(access, claim, "POST", "/v1/items/1") ?? "", /token's agent_access/)
    // The claim never widens: DELETE is the token's, not the connector's.
    assert.match(agentRefusal(access, claim, "DELETE", "/v1/items/1") ?? "", /connector's agent_access/)
    assert.match(agentRefusal(access, { allow: [] }, "GET", "/v1/items/1") ?? "", /token's agent_access/)
  })

  it("the origin is base_url, else https and the one exact allowed host", () => {
    assert.strictEqual(agentOrigin(access, []), "https://api.example.com")
    assert.strictEqual(agentOrigin({ base_url: "http://127.0.0.1:80", allow: [] }, []), "http://127.0.0.1")
    assert.strictEqual(agentOrigin({ allow: [] }, ["api.example.com:8443"]), "https://api.example.com:8443")
    assert.strictEqual(agentOrigin({ allow: [] }, ["a.example.com", "b.example.com"]), undefined)
    assert.strictEqual(agentOrigin({ allow: [] }, ["*.example.com"]), undefined)
  })

  it("the token claim decodes in TokenClaims", () => {
    const claims = Schema.decodeUnknownSync(TokenClaims)({
      sub: "agent",
      agent_access: { allow: [{ methods: ["GET"], path: "/v1/*" }] }
    })
    assert.deepStrictEqual(claims.agent_access, { allow: [{ methods: ["GET"], path: "/v1/*" }] })
    assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(TokenClaims)({ sub: "a", agent_access: { allow: [{}] } })))
  })
})

describe("agent_access in a connector definition", () => {
  const definition = (agent_access: unknown, allowed_hosts = ["api.example.com"]) => ({
    type: "demo",
    auth: { type: "none" },
    proxy: { allowed_hosts },
    agent_access
  })
  const fields = (input: unknown) =>
    Effect.runSync(
      decodeConnectorDefinition(input).pipe(
        Effect.map(() => []),
        Effect.catch((error) => Effect.succeed(issueDetails(error.issue).map((d) => d.field)))
      )
    )

  it("needs an origin the proxy allows", () => {
    assert.deepStrictEqual(fields(definition({ allow: [{ methods: ["GET"], path: "/x" }] })), [])
    assert.deepStrictEqual(
      fields(definition({ base_url: "https://other.example.com", allow: [{ methods: ["GET"], path: "/x" }] })),
      ["agent_access.base_url"]
    )
    assert.deepStrictEqual(
      fields(definition({ allow: [{ methods: ["GET"], path: "/x" }] }, ["a.example.com", "b.example.com"])),
      ["agent_access.base_url"]
    )
    assert.deepStrictEqual(fields(definition({ allow: [] }, [])), [])
  })
})
