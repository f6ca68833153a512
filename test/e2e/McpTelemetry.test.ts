/**
 * An agent's call over MCP in telemetry (docs/agents.md "Operating agent traffic"): with the
 * embedded default exporting to an in-process OTLP receiver, `POST /mcp` is a server span with
 * route `/mcp`, the upstream call is the proxy's client span under it (continuing the agent's W3C
 * trace), and nothing exported carries the connection's credential.
 */
import { randomBytes } from "node:crypto"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, expect, it } from "vitest"
import { eventually, launch, resources, type Svc } from "../support/Api.ts"
import { type OtlpReceiver, type ReceivedSpan, startHttpReceiver } from "../support/OtlpReceiver.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

const planted = `PLANTED${randomBytes(12).toString("hex")}`
const trace = randomBytes(16).toString("hex")
const parent = randomBytes(8).toString("hex")
let receiver: OtlpReceiver
let upstream: Upstream
let svc: Svc
let connectionId: string

beforeAll(async () => {
  receiver = await startHttpReceiver()
  upstream = await startUpstream()
  upstream.route("/v1/items", () => ({ status: 200, headers: { "content-type": "application/json" }, body: "[]" }))
  svc = await launch("svc-mcp-otel-", {
    env: {
      SVC__telemetry__enabled: "true",
      SVC__telemetry__exporter__protocol: "http/protobuf",
      SVC__telemetry__exporter__endpoint: receiver.endpoint,
      SVC__telemetry__exporter__insecure: "true",
      OTEL_BSP_SCHEDULE_DELAY: "200",
      OTEL_METRIC_EXPORT_INTERVAL: "500"
    }
  })
  const r = resources(svc)
  const ns = await r.freshNamespace("mcpotel")
  const connector = await r.publishedConnector(ns, {
    definition: {
      type: "demo",
      auth: { type: "api_key", placement: "bearer" },
      proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true },
      agent_access: { base_url: upstream.origin, allow: [{ methods: ["GET"], path: "/v1/items" }] }
    }
  })
  connectionId = (await r.connection(connector.id, { credentials: { api_key: planted } })).id
}, 120_000)

afterAll(async () => {
  await svc?.stop()
  await upstream?.close()
  await receiver?.close()
})

const spansWhere = (predicate: (s: ReceivedSpan) => boolean) =>
  eventually(
    async () => receiver.spans().filter(predicate),
    (found) => found.length > 0,
    20_000
  )

it("POST /mcp is a server span; the agent's upstream call is the proxy's client span under it", async () => {
  const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${svc.ports.api}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${svc.adminToken}`, traceparent: `00-${trace}-${parent}-01` } }
  })
  const client = new Client({ name: "svc-e2e", version: "1.0.0" })
  await client.connect(transport)
  try {
    const result = await client.callTool({
      name: "call_connection",
      arguments: { connection_id: connectionId, method: "GET", path: "/v1/items" }
    })
    expect(result.isError).toBeFalsy()
  } finally {
    await client.close()
  }
  const [proxied] = await spansWhere((s) => s.kind === 3 && s.attributes["svc.connection_id"] === connectionId)
  expect(proxied?.attributes).toMatchObject({ "svc.request.type": "proxy", "http.response.status_code": 200 })
  // The server span ends after its child and may come in a later export batch: wait for it by id.
  const [server] = await spansWhere((s) => s.kind === 2 && s.spanId === proxied?.parentSpanId)
  expect(server).toMatchObject({ name: "HTTP POST", traceId: trace })
  expect(server?.attributes["http.route"]).toBe("/mcp")
  for (const span of receiver.spans())
    expect(JSON.stringify(span, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(planted)
})
