/**
 * The MCP client configuration docs/agents.md gives ("Claude Desktop") works as written: its JSON
 * block is read from the page, the URL and token put in the way the page tells the user to, and
 * exactly that command, arguments and environment are started — `npx -y mcp-remote` resolved to
 * the `mcp-remote` pinned in test/package.json, so nothing is fetched — as a stdio MCP server the
 * SDK's `StdioClientTransport` and `Client` talk to, the way Claude Desktop does. Through the
 * bridge, the agent lists svc's tools and calls `list_connections` on a real svc process; the
 * token never appears in the bridge's output.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { afterAll, beforeAll, expect, it } from "vitest"
import { launch, resources, type Svc } from "../support/Api.ts"
import { tempDir } from "../support/SvcProcess.ts"

const repo = path.resolve(import.meta.dirname, "../..")
let svc: Svc
let token: string
let connectionId: string
let configDir: string

interface ServerEntry {
  readonly command: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
}

/** The first ```json block of the page's "Claude Desktop" section: its `mcpServers.svc`. */
const documentedEntry = (): ServerEntry => {
  const page = fs.readFileSync(path.join(repo, "docs/agents.md"), "utf8")
  const section = page.slice(page.indexOf("### Claude Desktop"))
  const block = /```json\n([\s\S]*?)\n```/.exec(section)?.[1]
  if (block === undefined) throw new Error("docs/agents.md: no JSON block under 'Claude Desktop'")
  const config = JSON.parse(block) as { mcpServers: Record<string, ServerEntry> }
  const entry = config.mcpServers.svc
  if (entry === undefined) throw new Error("docs/agents.md: no mcpServers.svc")
  return entry
}

/** The bin `npx -y mcp-remote` would run: the pinned package's, from node_modules. */
const localBridge = () => {
  const require = createRequire(path.join(repo, "test/package.json"))
  const manifestPath = require.resolve("mcp-remote/package.json")
  const manifest = JSON.parse(fs.readFileSync(manifestPath, "utf8")) as { bin: Record<string, string> }
  return path.join(path.dirname(manifestPath), manifest.bin["mcp-remote"] ?? "")
}

beforeAll(async () => {
  svc = await launch("svc-mcp-docs-")
  const r = resources(svc)
  const ns = await r.freshNamespace("mcpdocs")
  const connector = await r.publishedConnector(ns, {
    definition: {
      type: "demo",
      auth: { type: "api_key", placement: "bearer" },
      proxy: { allowed_hosts: ["api.example.com"] },
      agent_access: { allow: [{ methods: ["GET"], path: "/v1/items" }] }
    }
  })
  connectionId = (await r.connection(connector.id, { credentials: { api_key: "sk_docs_123456" } })).id
  const externalId = `agent-docs-${randomBytes(4).toString("hex")}`
  await r.create("actors", {
    externalId,
    namespace: ns,
    name: "docs",
    permissions: [{ namespace: `${ns}.**`, resources: ["connections"], verbs: ["get", "list", "proxy"] }]
  })
  token = await svc.sign(externalId, { agent_access: {} })
  configDir = await tempDir("svc-mcp-remote-")
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  if (configDir !== undefined) fs.rmSync(configDir, { recursive: true, force: true })
})

it("the Claude Desktop configuration of docs/agents.md reaches svc's tools through mcp-remote", async () => {
  const entry = documentedEntry()
  // What the page has the user run: `npx -y mcp-remote <url> …`.
  expect(entry.command).toBe("npx")
  expect(entry.args.slice(0, 2)).toEqual(["-y", "mcp-remote"])
  // What the page has the user change: the URL (a local svc: http://127.0.0.1:<api port>/mcp) and
  // the whole `Bearer <token>` in the environment variable.
  const documentedUrl = entry.args[2] ?? ""
  expect(documentedUrl).toMatch(/^https:\/\/.*\/mcp$/)
  const args = entry.args.slice(2).map((arg) => (arg === documentedUrl ? `http://127.0.0.1:${svc.ports.api}/mcp` : arg))
  const tokenVars = Object.keys(entry.env).filter((name) => entry.env[name]?.startsWith("Bearer "))
  expect(tokenVars).toHaveLength(1)
  const env = Object.fromEntries(
    Object.entries(entry.env).map(([name, value]) => [name, tokenVars.includes(name) ? `Bearer ${token}` : value])
  )
  // The token travels in the environment, never in the arguments.
  expect(args.join(" ")).not.toContain(token)

  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [localBridge(), ...args],
    // Where mcp-remote would keep OAuth state: this test's own directory, not the user's home.
    env: { ...env, MCP_REMOTE_CONFIG_DIR: configDir },
    stderr: "pipe"
  })
  let bridgeOutput = ""
  transport.stderr?.on("data", (chunk: Buffer) => {
    bridgeOutput += chunk.toString("utf8")
  })
  const client = new Client({ name: "claude-desktop-like", version: "1.0.0" })
  try {
    await client.connect(transport, { timeout: 30_000 })
    const { tools } = await client.listTools(undefined, { timeout: 15_000 })
    expect(tools.map((tool) => tool.name).sort()).toEqual([
      "call_connection",
      "describe_connection",
      "list_connections"
    ])
    const listed = (await client.callTool({ name: "list_connections", arguments: {} }, undefined, {
      timeout: 15_000
    })) as { isError?: boolean; structuredContent?: { connections?: Array<{ id: string }> } }
    expect(listed.isError, bridgeOutput).toBeFalsy()
    expect(listed.structuredContent?.connections?.map((connection) => connection.id)).toEqual([connectionId])
  } catch (error) {
    throw new Error(`${String(error)}\nmcp-remote said:\n${bridgeOutput}`)
  } finally {
    const pid = transport.pid
    await client.close().catch(() => {})
    if (pid !== null && pid !== undefined) {
      try {
        process.kill(pid, "SIGKILL")
      } catch {
        // already gone
      }
    }
  }
  expect(bridgeOutput).not.toContain(token)
}, 90_000)
