/**
 * Agent access over MCP (docs/agents.md), black-box: the official TypeScript SDK client
 * (`@modelcontextprotocol/sdk`) against a real svc process and a local upstream. An agent reaches
 * only what the connector's `agent_access` and its token's claim allow; every call goes through
 * the one exchange (credential injected, request event labelled `svc/agent/-/via=mcp`, rate-limit
 * rules and cool-downs applied); every refusal is a tool error with the HTTP API's code and leaves
 * the upstream untouched; no tool result ever carries the connection's credential.
 */
import { randomBytes } from "node:crypto"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { version } from "@svc/server/config/Version"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually, expectStatus, launch, resources, type Svc } from "../support/Api.ts"
import { startCliInProcess } from "../support/CliInProcess.ts"
import { tempDir } from "../support/SvcProcess.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

const secret = `PLANTED${randomBytes(12).toString("hex")}`
let svc: Svc
let upstream: Upstream
let ns: string
let agentId: string
let agentToken: string
/** A connection whose connector allows agents, one whose connector does not, one in another namespace. */
let allowed: string
let cooled: string
let limited: string
let noAccess: string
let elsewhere: string
const clients: Array<Client> = []
/** Every tool result of the run, for the leak scan. */
const results: Array<unknown> = []

interface ToolAnswer {
  readonly isError?: boolean
  readonly structuredContent?: Record<string, unknown>
  readonly content: ReadonlyArray<{ readonly type: string; readonly text?: string }>
}

const connect = async (token: string | undefined) => {
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${svc.ports.api}/mcp`), {
    requestInit: { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } }
  })
  const client = new Client({ name: "svc-e2e", version: "1.0.0" })
  await client.connect(transport)
  clients.push(client)
  return client
}

const call = async (client: Client, name: string, args: Record<string, unknown>): Promise<ToolAnswer> => {
  const answer = (await client.callTool({ name, arguments: args })) as ToolAnswer
  results.push(answer)
  return answer
}

/** The tool error's body (`{status, code, error, …}`). */
const toolError = (answer: ToolAnswer): Record<string, unknown> => {
  expect(answer.isError).toBe(true)
  return JSON.parse(answer.content[0]?.text ?? "{}") as Record<string, unknown>
}

const upstreamCalls = (path: string) => upstream.seen().filter((request) => request.path === path).length

const events = async (query: Record<string, string>) =>
  expectStatus<{ items: Array<{ path: string; labels: Record<string, string>; response_source: string }> }>(
    await svc.call("GET", `/api/v1/metrics/request-events?${new URLSearchParams(query)}`),
    200
  ).items

beforeAll(async () => {
  upstream = await startUpstream()
  upstream.route("/v1/items", () => ({
    status: 200,
    headers: { "content-type": "application/json", "set-cookie": "session=abc", "x-svc-ratelimited": "forged" },
    body: '{"items":[1,2,3]}'
  }))
  upstream.route("/v1/items/1", () => ({ status: 200, headers: { "content-type": "application/json" }, body: "{}" }))
  upstream.route("/v1/items/echo", (request) => ({
    status: 200,
    headers: { "content-type": "text/plain", "x-echo": String(request.headers.authorization) },
    body: `you sent ${String(request.headers.authorization)}`
  }))
  upstream.route("/v1/admin", () => ({ status: 200, body: "admin" }))
  upstream.route("/v1/big", () => ({
    status: 200,
    headers: { "content-type": "text/plain" },
    body: "x".repeat(100_000)
  }))
  upstream.route("/v1/slow-down", () => ({ status: 429, headers: { "retry-after": "60" }, body: "slow down" }))
  svc = await launch("svc-mcp-")
  const r = resources(svc)
  ns = await r.freshNamespace("mcp")
  const proxy = { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
  const agentConnector = await r.publishedConnector(ns, {
    definition: {
      type: "demo",
      auth: { type: "api_key", placement: "bearer" },
      proxy,
      agent_access: {
        base_url: upstream.origin,
        allow: [
          { methods: ["GET"], path: "/v1/items" },
          { methods: ["GET", "POST"], path: "/v1/items/*" },
          { methods: ["GET"], path: "/v1/big" },
          { methods: ["GET"], path: "/v1/slow-down" }
        ]
      }
    }
  })
  const plainConnector = await r.publishedConnector(ns, {
    definition: { type: "demo", auth: { type: "api_key", placement: "bearer" }, proxy }
  })
  allowed = (await r.connection(agentConnector.id, { credentials: { api_key: secret } })).id
  cooled = (await r.connection(agentConnector.id, { credentials: { api_key: secret } })).id
  limited = (await r.connection(agentConnector.id, { credentials: { api_key: secret }, labels: { lane: "x" } })).id
  noAccess = (await r.connection(plainConnector.id, { credentials: { api_key: secret } })).id
  const other = await r.freshNamespace("mcpother")
  const otherConnector = await r.publishedConnector(other, {
    definition: {
      type: "demo",
      auth: { type: "api_key", placement: "bearer" },
      proxy,
      agent_access: { base_url: upstream.origin, allow: [{ methods: ["GET"], path: "/v1/items" }] }
    }
  })
  elsewhere = (await r.connection(otherConnector.id, { credentials: { api_key: secret } })).id
  // The agent's actor may see and proxy connections of its namespace only.
  const externalId = `agent-${randomBytes(4).toString("hex")}`
  agentId = (
    await r.create("actors", {
      externalId,
      namespace: ns,
      name: "agent",
      permissions: [{ namespace: `${ns}.**`, resources: ["connections"], verbs: ["get", "list", "proxy"] }]
    })
  ).id
  agentToken = await svc.sign(externalId)
  // An operator's rule for agent traffic only: one agent call a minute per connection labelled lane=x.
  expectStatus(
    await svc.call("POST", "/api/v1/rate-limits", {
      body: {
        namespace: ns,
        definition: {
          selector: { label_selector: "svc/agent/-/via=mcp,lane=x" },
          bucket: { dimensions: ["connection"] },
          algorithm: { fixed_window: { window: "1h", limit: 1 } }
        }
      }
    }),
    201
  )
}, 120_000)

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => {})
  await svc?.stop()
  await upstream?.close()
})

describe("POST /mcp", () => {
  it("refuses a caller without a valid token with 401", async () => {
    const anonymous = await fetch(`http://127.0.0.1:${svc.ports.api}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
    })
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers.get("www-authenticate")).toMatch(/^Bearer/)
    await expect(connect("not-a-token")).rejects.toThrow()
  })

  it("serves the sessionless 2026-07-28 revision: one authenticated POST, no initialize", async () => {
    const response = await fetch(`http://127.0.0.1:${svc.ports.api}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${agentToken}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "describe_connection"
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: {
          name: "describe_connection",
          arguments: { connection_id: allowed },
          _meta: {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
          }
        }
      })
    })
    const text = await response.text()
    expect(response.status, text).toBe(200)
    expect(response.headers.get("mcp-session-id")).toBeNull()
    const body = text.startsWith("{")
      ? text
      : (text
          .split("\n")
          .find((line) => line.startsWith("data: "))
          ?.slice(6) ?? "")
    expect(JSON.parse(body)).toMatchObject({ id: 7, result: { structuredContent: { id: allowed } } })
  })

  it("lists the three tools with JSON-Schema inputs and outputs", async () => {
    const client = await connect(agentToken)
    expect(client.getServerVersion()).toEqual({ name: "svc", version })
    const { tools } = await client.listTools()
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      "call_connection",
      "describe_connection",
      "list_connections"
    ])
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe("object")
      expect(tool.outputSchema?.type).toBe("object")
    }
    const callTool = tools.find((tool) => tool.name === "call_connection")
    expect(Object.keys(callTool?.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(["connection_id", "method", "path", "query", "headers", "body"])
    )
  })

  it("lists and describes only what the actor may see", async () => {
    const client = await connect(agentToken)
    const listed = await call(client, "list_connections", {})
    const ids = ((listed.structuredContent?.connections ?? []) as Array<{ id: string }>).map((c) => c.id)
    expect(ids).toEqual(expect.arrayContaining([allowed, cooled, limited, noAccess]))
    expect(ids).not.toContain(elsewhere)
    const described = await call(client, "describe_connection", { connection_id: allowed })
    expect(described.structuredContent).toMatchObject({
      id: allowed,
      base_url: upstream.origin,
      operations: expect.arrayContaining([{ methods: ["GET"], path: "/v1/items" }])
    })
    expect(toolError(await call(client, "describe_connection", { connection_id: elsewhere }))).toMatchObject({
      status: 404,
      code: "not_found"
    })
  })

  it("calls an allowed path through the exchange: credential injected, event labelled via=mcp", async () => {
    const client = await connect(agentToken)
    const before = upstreamCalls("/v1/items")
    const answer = await call(client, "call_connection", {
      connection_id: allowed,
      method: "get",
      path: "/v1/items",
      query: { page: "2" },
      headers: { authorization: "Bearer agent-chosen", "x-custom": "kept" }
    })
    expect(answer.isError).toBeFalsy()
    expect(answer.structuredContent).toMatchObject({ status: 200, json: { items: [1, 2, 3] }, truncated: false })
    const headers = answer.structuredContent?.headers as Record<string, string>
    expect(headers["set-cookie"]).toBeUndefined()
    expect(headers["x-svc-ratelimited"]).toBeUndefined()
    expect(upstreamCalls("/v1/items")).toBe(before + 1)
    const seen = upstream
      .seen()
      .filter((request) => request.path === "/v1/items")
      .at(-1)
    expect(seen?.headers.authorization).toBe(`Bearer ${secret}`)
    expect(seen?.headers["x-custom"]).toBe("kept")
    expect(seen?.query.get("page")).toBe("2")
    const recorded = await eventually(
      () => events({ connectionId: allowed, labelSelector: "svc/agent/-/via=mcp" }),
      (items) => items.length > 0
    )
    expect(recorded[0]).toMatchObject({ path: "/v1/items", response_source: "upstream" })
    expect(recorded[0]?.labels).toMatchObject({ "svc/agent/-/via": "mcp", "svc/act/-/id": agentId })
  })

  it("refuses a path or method the connector does not allow, and a connector without agent_access", async () => {
    const client = await connect(agentToken)
    const before = upstream.seen().length
    for (const [id, method, path] of [
      [allowed, "GET", "/v1/admin"],
      [allowed, "DELETE", "/v1/items"],
      [allowed, "GET", "/v1/items/1/2"],
      [allowed, "GET", "/v1/items/x/../../admin"],
      [allowed, "GET", "/v1/items/a%2F..%2F..%2Fadmin"],
      [noAccess, "GET", "/v1/items"]
    ] as const) {
      const error = toolError(await call(client, "call_connection", { connection_id: id, method, path }))
      expect(error).toMatchObject({ status: 403, code: "agent_access_denied" })
    }
    expect(upstream.seen().length).toBe(before)
  })

  it("answers not_found for a connection in another namespace, without an upstream call", async () => {
    const client = await connect(agentToken)
    const before = upstream.seen().length
    const error = toolError(
      await call(client, "call_connection", { connection_id: elsewhere, method: "GET", path: "/v1/items" })
    )
    expect(error).toMatchObject({ status: 404, code: "not_found" })
    expect(upstream.seen().length).toBe(before)
  })

  it("a cooled-down connection is a rate_limited tool error without an upstream call", async () => {
    const client = await connect(agentToken)
    const first = await call(client, "call_connection", { connection_id: cooled, method: "GET", path: "/v1/slow-down" })
    expect(first.structuredContent).toMatchObject({ status: 429 })
    const before = upstream.seen().length
    const error = toolError(
      await call(client, "call_connection", { connection_id: cooled, method: "GET", path: "/v1/items" })
    )
    expect(error).toMatchObject({ status: 429, code: "rate_limited", rate_limit_id: null })
    expect(error.retry_after_seconds).toBeGreaterThan(0)
    expect(upstream.seen().length).toBe(before)
  })

  it("an operator's rule selecting svc/agent/-/via=mcp limits agent traffic only", async () => {
    const client = await connect(agentToken)
    const ok = await call(client, "call_connection", { connection_id: limited, method: "GET", path: "/v1/items" })
    expect(ok.structuredContent).toMatchObject({ status: 200 })
    const before = upstream.seen().length
    const error = toolError(
      await call(client, "call_connection", { connection_id: limited, method: "GET", path: "/v1/items" })
    )
    expect(error).toMatchObject({ status: 429, code: "rate_limited" })
    expect(error.rate_limit_id).toMatch(/^rl_/)
    expect(upstream.seen().length).toBe(before)
    // The same request through `_proxy` is not agent traffic: the rule does not select it.
    const direct = await svc.call<{ statusCode: number }>("POST", `/api/v1/connections/${limited}/_proxy`, {
      body: { url: `${upstream.origin}/v1/items`, method: "GET" }
    })
    expect(expectStatus<{ statusCode: number }>(direct, 200).statusCode).toBe(200)
    const rejected = await eventually(
      () => events({ connectionId: limited, labelSelector: "svc/agent/-/via=mcp" }),
      (items) => items.some((item) => item.response_source === "rate_limit")
    )
    expect(rejected.some((item) => item.response_source === "rate_limit")).toBe(true)
  })

  it("a token's agent_access claim narrows the connector's; such a token works only on /mcp", async () => {
    const externalId = `agent-narrow-${randomBytes(4).toString("hex")}`
    await resources(svc).create("actors", {
      externalId,
      namespace: ns,
      name: "narrow",
      permissions: [{ namespace: `${ns}.**`, resources: ["connections"], verbs: ["get", "list", "proxy"] }]
    })
    const narrow = await svc.sign(externalId, { agent_access: { allow: [{ methods: ["GET"], path: "/v1/items" }] } })
    const client = await connect(narrow)
    const ok = await call(client, "call_connection", { connection_id: allowed, method: "GET", path: "/v1/items" })
    expect(ok.structuredContent).toMatchObject({ status: 200 })
    const before = upstream.seen().length
    const error = toolError(
      await call(client, "call_connection", { connection_id: allowed, method: "GET", path: "/v1/items/1" })
    )
    expect(error).toMatchObject({ status: 403, code: "agent_access_denied" })
    expect(String(error.error)).toContain("token")
    expect(upstream.seen().length).toBe(before)
    const described = await call(client, "describe_connection", { connection_id: allowed })
    expect(described.structuredContent?.token_operations).toEqual([{ methods: ["GET"], path: "/v1/items" }])
    // Elsewhere the claim would not be enforced, so the token is refused there.
    const direct = await svc.call("POST", `/api/v1/connections/${allowed}/_proxy`, {
      token: narrow,
      body: { url: `${upstream.origin}/v1/items/1`, method: "GET" }
    })
    expect(direct.status).toBe(401)
    expect(direct.body).toMatchObject({ code: "agent_token" })
    expect(upstream.seen().length).toBe(before)
  })

  it("cli mcp-token signs a token an MCP client connects with: namespace scope and --allow narrowing", async () => {
    const externalId = `agent-cli-${randomBytes(4).toString("hex")}`
    await resources(svc).create("actors", {
      externalId,
      namespace: "root",
      name: "cli",
      permissions: [{ namespace: "root.**", resources: ["*"], verbs: ["*"] }]
    })
    const home = await tempDir("svc-mcp-home-")
    const run = startCliInProcess(
      ["mcp-token", "--actorId", externalId, "--namespace", ns, "--allow", "GET /v1/items", "--expires-in", "10m"],
      { cwd: svc.dir ?? "", home }
    )
    const outcome = await run.exit
    expect(outcome).toMatchObject({ code: 0, stderr: "" })
    const token = outcome.stdout.trim()
    const client = await connect(token)
    // The actor sees every namespace; the token only the one it was signed for.
    const listed = await call(client, "list_connections", {})
    const ids = ((listed.structuredContent?.connections ?? []) as Array<{ id: string }>).map((c) => c.id)
    expect(ids).toContain(allowed)
    expect(ids).not.toContain(elsewhere)
    const ok = await call(client, "call_connection", { connection_id: allowed, method: "GET", path: "/v1/items" })
    expect(ok.structuredContent).toMatchObject({ status: 200 })
    expect(
      toolError(await call(client, "call_connection", { connection_id: allowed, method: "GET", path: "/v1/items/1" }))
    ).toMatchObject({ code: "agent_access_denied" })
    // An admin-grade actor behind it, and still nothing but /mcp.
    expect((await svc.call("GET", "/api/v1/connections", { token })).status).toBe(401)
  })

  it("caps a large body with a marker", async () => {
    const client = await connect(agentToken)
    const answer = await call(client, "call_connection", { connection_id: allowed, method: "GET", path: "/v1/big" })
    expect(answer.structuredContent).toMatchObject({ status: 200, size: 100_000, truncated: true })
    const text = String(answer.structuredContent?.text)
    expect(text).toMatch(/\[truncated by svc: 65536 of 100000 bytes shown\]$/)
    expect(text.length).toBeLessThan(66_000)
  })

  it("never returns the credential, even when the upstream echoes it", async () => {
    const client = await connect(agentToken)
    const answer = await call(client, "call_connection", {
      connection_id: allowed,
      method: "GET",
      path: "/v1/items/echo"
    })
    expect(answer.structuredContent).toMatchObject({ status: 200 })
    expect(String(answer.structuredContent?.text)).toContain("[redacted by svc]")
    expect(results.length).toBeGreaterThan(15)
    for (const result of results) expect(JSON.stringify(result)).not.toContain(secret)
  })
})
