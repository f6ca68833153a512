/**
 * The api's MCP sessions are bounded (docs/agents.md "Sessions and deployment";
 * `mcp.session_idle_timeout`, `mcp.max_sessions` in docs/configuration.md): a session idle longer
 * than the timeout ends, the least recently used one beyond the cap is evicted, and a request
 * naming an ended session is answered 404 — the answer after which an MCP client starts a new
 * session. A session answers only the actor that opened it. Black-box, against a real svc with a
 * short timeout and a cap of three.
 */
import { randomBytes } from "node:crypto"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { launch, resources, type Svc } from "../support/Api.ts"

const idleSeconds = 3
let svc: Svc
let tokenA: string
let tokenB: string

const url = () => `http://127.0.0.1:${svc.ports.api}/mcp`

const post = (token: string, body: unknown, session?: string) =>
  fetch(url(), {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(session === undefined ? {} : { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" })
    },
    body: JSON.stringify(body)
  })

/** `initialize` over plain HTTP: the session id it returned. */
const open = async (token: string) => {
  const response = await post(token, {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "e2e", version: "1" } }
  })
  await response.text()
  expect(response.status).toBe(200)
  const id = response.headers.get("mcp-session-id")
  expect(id).toBeTruthy()
  return id ?? ""
}

/** `tools/list` in a session: its HTTP status. */
const use = async (token: string, session: string) => {
  const response = await post(token, { jsonrpc: "2.0", id: 2, method: "tools/list" }, session)
  await response.text()
  return response.status
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

beforeAll(async () => {
  svc = await launch("svc-mcp-sessions-", {
    env: { SVC__mcp__session_idle_timeout: `${idleSeconds}s`, SVC__mcp__max_sessions: "3" }
  })
  const r = resources(svc)
  const ns = await r.freshNamespace("mcpsess")
  const permissions = [{ namespace: `${ns}.**`, resources: ["connections"], verbs: ["get", "list", "proxy"] }]
  const a = `agent-a-${randomBytes(4).toString("hex")}`
  const b = `agent-b-${randomBytes(4).toString("hex")}`
  await r.create("actors", { externalId: a, namespace: ns, name: "a", permissions })
  await r.create("actors", { externalId: b, namespace: ns, name: "b", permissions })
  tokenA = await svc.sign(a)
  tokenB = await svc.sign(b)
}, 120_000)

afterAll(async () => {
  await svc?.stop()
})

describe("MCP sessions", () => {
  it("an idle session expires: its id is answered 404, and the SDK client connects anew", async () => {
    const transport = new StreamableHTTPClientTransport(new URL(url()), {
      requestInit: { headers: { authorization: `Bearer ${tokenA}` } }
    })
    const client = new Client({ name: "e2e-idle", version: "1.0.0" })
    await client.connect(transport)
    await client.listTools()
    const expired = transport.sessionId ?? ""
    expect(expired).not.toBe("")
    await sleep((idleSeconds + 2) * 1000)
    expect(await use(tokenA, expired)).toBe(404)
    await expect(client.listTools()).rejects.toMatchObject({ code: 404 })
    await client.close()
    // The client's answer to 404: a new session, which works.
    const again = new Client({ name: "e2e-idle", version: "1.0.0" })
    const fresh = new StreamableHTTPClientTransport(new URL(url()), {
      requestInit: { headers: { authorization: `Bearer ${tokenA}` } }
    })
    await again.connect(fresh)
    expect((await again.listTools()).tools.length).toBe(3)
    expect(fresh.sessionId).not.toBe(expired)
    await fresh.terminateSession()
    await again.close()
  }, 60_000)

  it("a session in use does not expire", async () => {
    const session = await open(tokenA)
    for (let i = 0; i < 4; i++) {
      await sleep(((idleSeconds * 1000) / 2) | 0)
      expect(await use(tokenA, session)).toBe(200)
    }
  }, 60_000)

  it("beyond mcp.max_sessions the least recently used session is evicted", async () => {
    // Older sessions of the file have expired by now; these four are the only ones.
    await sleep((idleSeconds + 2) * 1000)
    const first = await open(tokenA)
    const second = await open(tokenA)
    const third = await open(tokenA)
    expect(await use(tokenA, first)).toBe(200) // `second` is now the least recently used
    const fourth = await open(tokenA)
    expect(await use(tokenA, second)).toBe(404)
    for (const kept of [first, third, fourth]) expect(await use(tokenA, kept)).toBe(200)
  }, 60_000)

  it("a session answers only the actor that opened it; DELETE ends it", async () => {
    const session = await open(tokenA)
    expect(await use(tokenB, session)).toBe(404)
    const foreignDelete = await fetch(url(), {
      method: "DELETE",
      headers: { authorization: `Bearer ${tokenB}`, "mcp-session-id": session }
    })
    expect(foreignDelete.status).toBe(404)
    expect(await use(tokenA, session)).toBe(200)
    const own = await fetch(url(), {
      method: "DELETE",
      headers: { authorization: `Bearer ${tokenA}`, "mcp-session-id": session }
    })
    expect(own.status).toBe(204)
    expect(await use(tokenA, session)).toBe(404)
  })
})
