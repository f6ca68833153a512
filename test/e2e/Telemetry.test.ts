/**
 * Telemetry black-box (issue 20; spec 8.3; docs/telemetry.md): the embedded default with a
 * `telemetry` block exporting to an in-process OTLP receiver, once per protocol (gRPC,
 * http/protobuf). Checked: the inbound server span `HTTP {method}` continuing an inbound W3C
 * trace, the outbound proxy span under it with the svc.* attributes and the label projection, the
 * `traceparent` sent upstream only where the connector asks for it, 5xx in error and 4xx unset,
 * excluded paths, `X-Request-Id` echoed or generated, the HTTP and client metrics with their
 * routes and labels (never the raw connector id), the Prometheus scrape, the JSON access log, and
 * a leak scan of every exported byte for the planted credential and the admin token.
 */
import { randomBytes } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type OtlpReceiver, type ReceivedSpan, startGrpcReceiver, startHttpReceiver } from "../support/OtlpReceiver.ts"
import { eventually, expectStatus, launch, resources, type Svc } from "../support/Api.ts"
import { startUpstream, type Upstream } from "../support/Upstream.ts"

const planted = `PLANTED${randomBytes(12).toString("hex")}`
const inboundTrace = randomBytes(16).toString("hex")
const inboundParent = randomBytes(8).toString("hex")

for (const start of [startGrpcReceiver, startHttpReceiver]) {
  const protocol = start === startGrpcReceiver ? "grpc" : "http/protobuf"
  describe(`telemetry over ${protocol}`, () => {
    let receiver: OtlpReceiver
    let upstream: Upstream
    let svc: Svc
    let propagating: string
    let silent: string
    let connectorIds: Array<string>

    beforeAll(async () => {
      receiver = await start()
      upstream = await startUpstream()
      upstream.route("/ok", () => ({ status: 200, headers: { "content-type": "application/json" }, body: "{}" }))
      upstream.route("/broken", () => ({ status: 500, body: "broken" }))
      svc = await launch("svc-telemetry-", {
        // A first start: its "generated a development JWT signing key" warning is the JSON log record checked below.
        fresh: true,
        env: {
          SVC__telemetry__enabled: "true",
          SVC__telemetry__exporter__protocol: protocol,
          SVC__telemetry__exporter__endpoint: receiver.endpoint,
          SVC__telemetry__exporter__insecure: "true",
          SVC__telemetry__proxy__spanAttributeLabels: "[team, owner]",
          SVC__telemetry__proxy__metricDimensionLabels: "[team, owner]",
          SVC__telemetry__prometheus__enabled: "true",
          SVC__log__access: "true",
          SVC__log__format: "json",
          SVC__outbound__allow_private_networks: "true",
          OTEL_BSP_SCHEDULE_DELAY: "200",
          OTEL_BLRP_SCHEDULE_DELAY: "200",
          OTEL_METRIC_EXPORT_INTERVAL: "500"
        }
      })
      const r = resources(svc)
      const ns = await r.freshNamespace("otel")
      const connector = (propagate: boolean | undefined) =>
        r.publishedConnector(ns, {
          // Carried to its connections as svc/cxr/owner: only the connector's own set has `owner`.
          labels: { owner: "platform" },
          definition: {
            type: `otel-${propagate}`,
            auth: { type: "api_key", placement: "bearer" },
            proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true },
            ...(propagate === undefined ? {} : { telemetry: { propagateTraceContext: propagate } })
          }
        })
      const a = await connector(true)
      const b = await connector(undefined)
      connectorIds = [a.id, b.id]
      const labels = { team: "red", tier: "gold" }
      propagating = (await r.connection(a.id, { labels, credentials: { api_key: planted } })).id
      silent = (await r.connection(b.id, { labels, credentials: { api_key: planted } })).id
    }, 120_000)

    afterAll(async () => {
      await svc?.stop()
      await upstream?.close()
      await receiver?.close()
    })

    const raw = (connectionId: string, path: string, headers: Record<string, string> = {}) =>
      fetch(`http://127.0.0.1:${svc.ports.api}/api/v1/connections/${connectionId}/_proxy_raw`, {
        headers: {
          authorization: `Bearer ${svc.adminToken}`,
          "x-svc-upstream-url": `${upstream.origin}${path}`,
          ...headers
        }
      })

    const spansWhere = (predicate: (s: ReceivedSpan) => boolean, count = 1) =>
      eventually(
        async () => receiver.spans().filter(predicate),
        (found) => found.length >= count,
        20_000
      )

    it("continues an inbound trace: server span, client span under it, traceparent upstream", async () => {
      const response = await raw(propagating, "/ok/propagating", {
        traceparent: `00-${inboundTrace}-${inboundParent}-01`,
        "x-request-id": "req-from-caller.1"
      })
      expect(response.status).toBe(200)
      await response.text()
      expect(response.headers.get("x-request-id")).toBe("req-from-caller.1")

      const seen = upstream.seen().find((s) => s.path === "/ok/propagating")
      const sent = String(seen?.headers.traceparent ?? "")
      expect(sent).toMatch(new RegExp(`^00-${inboundTrace}-[0-9a-f]{16}-01$`))

      const [server] = await spansWhere((s) => s.traceId === inboundTrace && s.kind === 2)
      const [client] = await spansWhere(
        (s) => s.traceId === inboundTrace && s.kind === 3 && s.attributes["svc.request.type"] === "proxy"
      )
      expect(server).toMatchObject({ name: "HTTP GET", parentSpanId: inboundParent })
      expect(server?.attributes).toMatchObject({
        "http.request.method": "GET",
        "http.route": "/api/v1/connections/:id/_proxy_raw",
        "http.response.status_code": 200,
        "url.path": `/api/v1/connections/${propagating}/_proxy_raw`,
        "svc.service": "api"
      })
      expect(server?.resource["service.name"]).toBe("svc-api+admin-api+public+worker")
      expect(client).toMatchObject({ name: "HTTP GET", parentSpanId: server?.spanId })
      // The span the upstream was told about is the client span.
      expect(sent.split("-")[2]).toBe(client?.spanId)
      expect(client?.attributes).toMatchObject({
        "svc.request.type": "proxy",
        "svc.connection_id": propagating,
        "svc.connector_id": connectorIds[0],
        "svc.connector_version": 1,
        "svc.label.team": "red",
        "svc.label.owner": "platform",
        "http.response.status_code": 200
      })
      expect(typeof client?.attributes["svc.namespace"]).toBe("string")
      expect(client?.attributes["svc.label.tier"]).toBeUndefined()
    })

    it("sends no traceparent for a connector that does not ask (injectOutboundDefault false), generates a request id", async () => {
      const response = await raw(silent, "/ok/silent")
      expect(response.status).toBe(200)
      await response.text()
      expect(response.headers.get("x-request-id")).toMatch(/^[0-9a-f]{32}$/)
      const seen = upstream.seen().find((s) => s.path === "/ok/silent")
      expect(seen?.headers.traceparent).toBeUndefined()
      const [client] = await spansWhere((s) => s.kind === 3 && s.attributes["svc.connection_id"] === silent)
      expect(client).toBeDefined()
      const server = receiver.spans().find((s) => s.kind === 2 && s.spanId === client?.parentSpanId)
      expect(server?.attributes["url.path"]).toBe(`/api/v1/connections/${silent}/_proxy_raw`)
    })

    it("sets a 5xx server span in error and leaves a 4xx unset; excluded paths get no span", async () => {
      const broken = await raw(silent, "/broken")
      expect(broken.status).toBe(500)
      await broken.text()
      const missing = await fetch(`http://127.0.0.1:${svc.ports.api}/no/such/path`)
      expect(missing.status).toBe(404)
      expect((await fetch(`http://127.0.0.1:${svc.ports.api}/healthz`)).status).toBe(200)
      const [failed] = await spansWhere(
        (s) => s.kind === 2 && s.attributes["http.response.status_code"] === 500 && s.name === "HTTP GET"
      )
      expect(failed?.status.code).toBe(2)
      const [notFound] = await spansWhere((s) => s.kind === 2 && s.attributes["url.path"] === "/no/such/path")
      expect(notFound?.status.code).toBe(0)
      expect(notFound?.attributes["http.route"]).toBeUndefined()
      expect(receiver.spans().some((s) => s.attributes["url.path"] === "/healthz")).toBe(false)
    })

    it("exports the HTTP and client metrics with routes and projected labels, never the connector id", async () => {
      const points = await eventually(
        async () => receiver.points(),
        (p) =>
          p.some((x) => x.metric === "svc.client.request.duration") &&
          p.some((x) => x.metric === "http.server.request.duration"),
        20_000
      )
      const server = points.filter((p) => p.metric === "http.server.request.duration")
      expect(server.every((p) => p.unit === "s")).toBe(true)
      expect(server.map((p) => p.attributes["http.route"])).toContain("/api/v1/connections/:id/_proxy_raw")
      const client = points.filter((p) => p.metric === "svc.client.request.duration")
      expect(
        client.some((p) => p.attributes["svc.label.team"] === "red" && p.attributes["svc.label.owner"] === "platform")
      ).toBe(true)
      expect(points.some((p) => p.metric === "http.server.active_requests")).toBe(true)
      for (const p of points) {
        for (const id of connectorIds) expect(Object.values(p.attributes)).not.toContain(id)
      }
    })

    it("serves /metrics in the Prometheus format and writes a JSON access log", async () => {
      const scrape = await fetch(`http://127.0.0.1:${svc.ports.metrics}/metrics`)
      expect(scrape.status).toBe(200)
      const text = await scrape.text()
      expect(text).toContain("# TYPE http_server_request_duration_seconds histogram")
      expect(text).toMatch(/svc_client_request_duration_seconds_count\{[^}]*svc_label_team="red"[^}]*\} \d+/)
      const access = await eventually(
        async () =>
          svc
            .output()
            .split("\n")
            .filter((line) => line.startsWith("{") && line.includes('"message":"access"'))
            .map((line) => JSON.parse(line) as Record<string, unknown>),
        (lines) => lines.some((l) => l.request_id === "req-from-caller.1"),
        10_000
      )
      const line = access.find((l) => l.request_id === "req-from-caller.1")
      expect(line).toMatchObject({
        method: "GET",
        route: "/api/v1/connections/:id/_proxy_raw",
        status: 200,
        trace_id: inboundTrace
      })
      expect(String(line?.actor_id)).toMatch(/^act_/)
      // A remembered caller's `_proxy_raw` takes the fast path (the router never sees it): its line
      // names the same actor, and so does a fast envelope call.
      for (let i = 0; i < 3; i++) {
        const again = await raw(silent, "/ok/fast", { "x-request-id": `req-fast.${i}` })
        expect(again.status).toBe(200)
        await again.text()
      }
      const fast = await eventually(
        async () =>
          svc
            .output()
            .split("\n")
            .filter((l) => l.startsWith("{") && l.includes('"message":"access"') && l.includes('"req-fast.'))
            .map((l) => JSON.parse(l) as Record<string, unknown>),
        (lines) => lines.length === 3,
        10_000
      )
      for (const l of fast) expect(l.actor_id).toBe(line?.actor_id)
      // log.format json: the process's own log records are JSON objects too.
      const records = svc
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{") && l.includes('"fiberId"'))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
      expect(records.some((r) => r.level === "WARN" && String(r.message).includes("development JWT signing key"))).toBe(
        true
      )
      // Every record of `svc serve` names the services this process runs.
      expect(records.length).toBeGreaterThan(0)
      for (const r of records) expect(r.service).toBe("api,admin-api,public,worker")
    })

    it("exports no planted credential and no token, in any byte", async () => {
      // An envelope call too, with the credential injected upstream.
      expectStatus(
        await svc.call("POST", `/api/v1/connections/${propagating}/_proxy`, {
          body: { url: `${upstream.origin}/ok/envelope`, method: "GET" }
        }),
        200
      )
      const [envelope] = await spansWhere(
        (s) => s.kind === 2 && s.attributes["http.route"] === "/api/v1/connections/:id/_proxy"
      )
      // The envelope route's outbound span hangs from its server span too (on the fast path as on
      // the HttpApi route), and its traceparent went upstream (the connector asks for it).
      const [call] = await spansWhere(
        (s) => s.kind === 3 && s.parentSpanId === envelope?.spanId && s.attributes["svc.request.type"] === "proxy"
      )
      expect(call?.attributes["svc.connection_id"]).toBe(propagating)
      expect(String(upstream.seen().find((s) => s.path === "/ok/envelope")?.headers.traceparent)).toBe(
        `00-${envelope?.traceId}-${call?.spanId}-01`
      )
      expect(envelope?.status.code).toBe(0)
      // Database spans (of every request) carry names only, never a statement.
      const database = receiver.spans().filter((s) => s.name === "pglite")
      expect(database.length).toBeGreaterThan(0)
      for (const span of database) {
        expect(Object.keys(span.attributes).every((k) => k.startsWith("db.") && k !== "db.query.text")).toBe(true)
        expect(span.parentSpanId).not.toBe("")
      }
      const needles: Array<[string, string]> = [
        ["credential", planted],
        ["credential (base64)", Buffer.from(planted).toString("base64")],
        ["admin token", svc.adminToken],
        ["admin token signature", svc.adminToken.split(".")[2] ?? svc.adminToken]
      ]
      const hits = needles
        .filter(([, needle]) => receiver.exports().some((e) => e.bytes.includes(needle)))
        .map(([name]) => name)
      expect(hits).toEqual([])
      expect(receiver.exports().length).toBeGreaterThan(0)
    })
  })
}
