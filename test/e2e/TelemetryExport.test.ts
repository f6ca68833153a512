/**
 * The OTLP export of telemetry in-process (issue 20; docs/telemetry.md), against the in-process
 * receiver over both protocols: span names, kinds, parent links through transparent internal
 * spans, the outbound span under the inbound one, attributes and the label projection, the
 * resource, metric names, units, temporality and the value cap, log records stamped with the
 * span's ids, headers sent as gRPC metadata / HTTP headers, and a leak scan of every exported
 * byte for secrets planted where code might put them (library span attributes, log annotations,
 * span events, labels outside the allowlists).
 */
import type { ResolvedTelemetry } from "@svc/server/config/TelemetryConfig"
import { parseKeyValueList, resolveTelemetry } from "@svc/server/config/TelemetryConfig"
import { counter, Meter } from "@svc/server/telemetry/Metrics"
import { LabelProjection } from "@svc/server/telemetry/LabelProjection"
import { Telemetry } from "@svc/server/telemetry/Telemetry"
import * as TelemetryLayer from "@svc/server/telemetry/TelemetryLayer"
import { connectRedis } from "@svc/server/stores/CounterStore"
import { makeRedisRateLimitStore } from "@svc/server/stores/RateLimitStore"
import { routeMatcher } from "@svc/server/telemetry/Inbound"
import { records, recordRequestException } from "@svc/server/telemetry/InboundSpans"
import { encodeTraces } from "@svc/server/telemetry/OtlpProtobuf"
import { type ExportedSpan, makeTracer, parseTraceparent, StatusCode } from "@svc/server/telemetry/Tracing"
import { HttpServerRequest } from "effect/http"
import type { IncomingMessage } from "node:http"
import { Cause, Effect, Exit, Metric, Tracer } from "effect"
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "vitest"
import { decodeTraces, type OtlpReceiver, startGrpcReceiver, startHttpReceiver } from "../support/OtlpReceiver.ts"

const settingsFor = (receiver: OtlpReceiver, overrides: Record<string, unknown> = {}): ResolvedTelemetry => {
  const problems: Array<string> = []
  const settings = resolveTelemetry(
    {
      enabled: true,
      exporter: {
        protocol: receiver.protocol,
        endpoint: receiver.endpoint,
        insecure: true,
        headers: { "x-collector-key": { envVar: "TEST_COLLECTOR_KEY" } }
      },
      resource: { serviceNamePrefix: "svct", attributes: { "deployment.environment": "test" } },
      proxy: { spanAttributeLabels: ["team", "tier"], metricDimensionLabels: ["team"], metricDimensionValueCap: 2 },
      ...overrides
    },
    { TEST_COLLECTOR_KEY: collectorKey, OTEL_METRIC_EXPORT_INTERVAL: "100000", OTEL_BSP_SCHEDULE_DELAY: "100000" },
    problems
  )
  expect(problems).toEqual([])
  return settings
}

const secret = () => `PLANTED${randomBytes(12).toString("hex")}`
const collectorKey = secret()
const planted = { attribute: secret(), annotation: secret(), event: secret(), label: secret(), message: secret() }

/** One inbound request with an outbound call and a database span under a transparent internal span. */
const workload = (sampled: boolean) =>
  Effect.gen(function* () {
    const telemetry = yield* Telemetry
    const tracer = telemetry.tracer
    if (tracer === undefined) throw new Error("tracing is off")
    const inbound = tracer.start("HTTP POST", "server", undefined, {
      "http.request.method": "POST",
      "url.path": "/api/v1/connections/con_x/_proxy_raw",
      "svc.service": "api"
    })
    const inner = Effect.gen(function* () {
      const parent = yield* Effect.currentParentSpan
      // An outbound call from plain code under the current (transparent) span: hangs from the inbound span.
      for (const team of ["red", "blue", "green", "red"]) {
        const call = telemetry.startOutbound({
          requestType: "proxy",
          method: "GET",
          url: new URL("http://127.0.0.1:9/things?token=x"),
          namespace: "root.telemetry",
          connectorId: "cnr_test",
          connectorVersion: 3,
          connectionId: "con_test",
          connectorLabels: { team: "connector-team", tier: "gold" },
          connectionLabels: { team, secret: planted.label },
          requestLabels: { tier: "platinum" },
          propagateTraceContext: true,
          parent,
          requestBodySize: 10
        })
        // Injected (the connector says so) with the sampling decision of the trace.
        expect(call.traceparent).toMatch(
          sampled ? /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/ : /^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/
        )
        call.end({ status: 200, responseBodySize: 20 })
      }
      // A library span (a SQL client): only allowlisted attributes survive; events never.
      yield* Effect.gen(function* () {
        yield* Effect.annotateCurrentSpan("db.query.text", `select '${planted.attribute}'`)
        yield* Effect.annotateCurrentSpan("db.system.name", "postgresql")
        const span = yield* Effect.currentSpan
        span.event(`event ${planted.event}`, 0n)
      }).pipe(Effect.withSpan("svc_db", { kind: "client" }))
      // A library span outside any trace svc started (a background poll): not exported.
      yield* Effect.void.pipe(Effect.withSpan("orphan_db", { kind: "client", root: true }))
      yield* Effect.logInfo("handled").pipe(Effect.annotateLogs("credential", planted.annotation))
      telemetry.oauth2.refreshAttempt("failure", [{ team: "red" }])
      telemetry.oauth2.refreshFailure("invalid_grant", [{ team: "red" }])
      telemetry.oauth2.revocation("refresh_token", "success")
    }).pipe(Effect.withSpan("DataPlane.proxyRaw"), Effect.provideService(Tracer.ParentSpan, inbound))
    yield* inner
    inbound.attribute("http.response.status_code", 200)
    inbound.end(BigInt(Date.now()) * 1_000_000n, (yield* Effect.exit(Effect.void)) as never)
    return inbound
  })

const run = async (receiver: OtlpReceiver, overrides: Record<string, unknown> = {}) => {
  const settings = settingsFor(receiver, overrides)
  const layer = TelemetryLayer.layer({ telemetry: settings, log: { level: "info", format: "text", access: false } }, [
    "api"
  ])
  // Closing the layer flushes every exporter (shutdown flush). A registry of its own per run.
  return Effect.runPromise(
    Effect.provide(workload(settings.samplingRatio > 0), layer).pipe(
      Effect.provideService(Metric.MetricRegistry, new Map())
    )
  )
}

const settle = async (receiver: OtlpReceiver, done: () => boolean) => {
  for (let waited = 0; !done() && waited < 10_000; waited += 50) await new Promise((r) => setTimeout(r, 50))
  expect(done()).toBe(true)
  return receiver
}

for (const start of [startGrpcReceiver, startHttpReceiver]) {
  describe(`OTLP export (${start === startGrpcReceiver ? "grpc" : "http/protobuf"})`, () => {
    it("exports the spec's spans, metrics and logs, and nothing planted", async () => {
      const receiver = await start()
      try {
        const inbound = await run(receiver)
        await settle(
          receiver,
          () => receiver.spans().length >= 6 && receiver.points().length > 0 && receiver.logs().length > 0
        )

        const spans = receiver.spans()
        // Exactly the spec's spans: the internal `DataPlane.proxyRaw` is transparent.
        expect(spans.map((s) => s.name).sort()).toEqual(
          ["HTTP GET", "HTTP GET", "HTTP GET", "HTTP GET", "HTTP POST", "svc_db"].sort()
        )
        const server = spans.find((s) => s.name === "HTTP POST")!
        expect(server.kind).toBe(2)
        expect(server.spanId).toBe(inbound.spanId)
        expect(server.resource["service.name"]).toBe("svct-api")
        expect(server.resource["deployment.environment"]).toBe("test")
        expect(typeof server.resource["service.version"]).toBe("string")
        expect(String(server.resource["service.instance.id"])).toMatch(/^[0-9a-f-]{36}$/)
        for (const client of spans.filter((s) => s.name === "HTTP GET")) {
          expect(client.kind).toBe(3)
          expect(client.traceId).toBe(server.traceId)
          expect(client.parentSpanId).toBe(server.spanId)
          expect(client.attributes).toMatchObject({
            "svc.request.type": "proxy",
            "svc.namespace": "root.telemetry",
            "svc.connector_id": "cnr_test",
            "svc.connector_version": 3,
            "svc.connection_id": "con_test",
            "http.response.status_code": 200,
            // connector, then connection, then request labels; only allowlisted keys
            "svc.label.tier": "platinum"
          })
          expect(Object.keys(client.attributes).filter((k) => k.startsWith("svc.label."))).toEqual(
            expect.arrayContaining(["svc.label.team", "svc.label.tier"])
          )
          expect(client.attributes["svc.label.secret"]).toBeUndefined()
        }
        const db = spans.find((s) => s.name === "svc_db")!
        expect(db.parentSpanId).toBe(server.spanId)
        expect(db.attributes).toEqual({ "db.system.name": "postgresql" })
        expect(db.events).toEqual([])

        const points = receiver.points()
        const duration = points.filter((p) => p.metric === "svc.client.request.duration")
        expect(duration.every((p) => p.unit === "s" && p.type === "histogram" && p.temporality === 2)).toBe(true)
        // Value cap 2 per key: red and blue kept, green collapses to `other`; the connector id is never an attribute.
        expect(duration.map((p) => p.attributes["svc.label.team"]).sort()).toEqual(["blue", "other", "red"])
        expect(duration.reduce((n, p) => n + p.count, 0)).toBe(4)
        for (const p of points) expect(Object.values(p.attributes)).not.toContain("cnr_test")
        expect(points.find((p) => p.metric === "svc.client.response.body.size")?.unit).toBe("By")
        // The request's size is the route's own count (the caller's content-length is not forwarded).
        const requestSize = points.filter((p) => p.metric === "svc.client.request.body.size")
        expect(requestSize.every((p) => p.unit === "By" && p.type === "histogram")).toBe(true)
        expect(requestSize.reduce((n, p) => n + p.count, 0)).toBe(4)
        expect(points.find((p) => p.metric === "svc.oauth2.refresh.attempts.total")?.attributes).toEqual({
          result: "failure",
          "svc.label.team": "red"
        })
        expect(points.find((p) => p.metric === "svc.oauth2.refresh.failures.total")?.attributes.reason).toBe(
          "invalid_grant"
        )
        expect(points.find((p) => p.metric === "svc.oauth2.revocations.total")?.attributes).toEqual({
          revocation_kind: "refresh_token",
          result: "success"
        })

        const log = receiver.logs().find((l) => l.body === "handled")!
        expect(log.traceId).toBe(server.traceId)
        expect(log.spanId).toBe(server.spanId)

        // The configured header reaches the collector (metadata or HTTP header) ...
        for (const e of receiver.exports()) expect(e.headers["x-collector-key"]).toBe(collectorKey)
        // ... and no planted value is in any exported byte.
        const leaks = Object.entries(planted).filter(([, value]) =>
          receiver.exports().some((e) => e.bytes.includes(value))
        )
        expect(leaks.map(([name]) => name)).toEqual([])
      } finally {
        await receiver.close()
      }
    })

    it("samples new traces at the ratio, and a child follows its parent's decision", async () => {
      const receiver = await start()
      try {
        await run(receiver, { sampling: { ratio: 0 } })
        // Nothing sampled: no span at all (metrics and logs still flow).
        await settle(receiver, () => receiver.points().length > 0)
        expect(receiver.spans()).toEqual([])
      } finally {
        await receiver.close()
      }
    })

    it("signals switch independently", async () => {
      const receiver = await start()
      try {
        await run(receiver, { signals: { traces: true, metrics: false, logs: false } })
        await settle(receiver, () => receiver.spans().length > 0)
        expect(receiver.exports().map((e) => e.signal)).not.toContain("metrics")
        expect(receiver.exports().map((e) => e.signal)).not.toContain("logs")
      } finally {
        await receiver.close()
      }
    })
  })
}

describe("telemetry configuration", () => {
  it("honours OTEL_* variables under the YAML, and an empty endpoint soft-disables", () => {
    const problems: Array<string> = []
    const env = {
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf",
      OTEL_EXPORTER_OTLP_HEADERS: "api-key=abc%20def,other=1",
      OTEL_RESOURCE_ATTRIBUTES: "team=core,deployment.environment=prod",
      OTEL_SERVICE_NAME: "from-env",
      OTEL_METRIC_EXPORT_INTERVAL: "15000",
      OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: "delta"
    }
    const fromEnv = resolveTelemetry({ enabled: true }, env, problems)
    expect(fromEnv).toMatchObject({
      enabled: true,
      protocol: "http/protobuf",
      endpoint: "http://collector:4318",
      headers: { "api-key": "abc def", other: "1" },
      resourceAttributes: { team: "core", "deployment.environment": "prod" },
      serviceNameOverride: "from-env",
      metricExportIntervalMs: 15000,
      temporality: "delta",
      samplingRatio: 1,
      signals: { traces: true, metrics: true, logs: true },
      injectOutboundDefault: false
    })
    expect([...fromEnv.excludedPaths].sort()).toEqual(["/healthz", "/livez", "/ping", "/readyz"])
    const yamlWins = resolveTelemetry(
      {
        enabled: true,
        exporter: { protocol: "grpc", endpoint: "yaml:4317", headers: { "api-key": "yaml" } },
        resource: { serviceNamePrefix: "acme", attributes: { "deployment.environment": "staging" } }
      },
      env,
      problems
    )
    expect(yamlWins).toMatchObject({
      protocol: "grpc",
      endpoint: "yaml:4317",
      headers: { "api-key": "yaml", other: "1" },
      serviceNamePrefix: "acme",
      serviceNameOverride: undefined,
      resourceAttributes: { team: "core", "deployment.environment": "staging" }
    })
    expect(
      resolveTelemetry(
        { enabled: true, exporter: { endpoint: { envVar: "SVC_OTEL_ENDPOINT", default: "" } } },
        env,
        problems
      ).enabled
    ).toBe(false)
    expect(resolveTelemetry({ enabled: false }, env, problems).enabled).toBe(false)
    expect(resolveTelemetry(undefined, env, problems).enabled).toBe(false)
    expect(problems).toEqual([])
    expect(parseKeyValueList("a=1,=2,b")).toEqual({ a: "1" })
  })

  it("projects labels in the effective order and caps metric values per key", () => {
    const projection = new LabelProjection(["a", "b"], ["a"], 1)
    const span: Record<string, string | number | boolean> = {}
    projection.spanAttributes([{ a: "connector", b: "connector" }, { a: "connection" }, { a: "request" }], span)
    expect(span).toEqual({ "svc.label.a": "request", "svc.label.b": "connector" })
    const first: Record<string, string | number | boolean> = {}
    projection.metricAttributes([{ a: "x", c: "dropped" }], first)
    const second: Record<string, string | number | boolean> = {}
    projection.metricAttributes([{ a: "y" }], second)
    expect([first, second]).toEqual([{ "svc.label.a": "x" }, { "svc.label.a": "other" }])
  })

  it("formats one registry for Prometheus: svc's instruments and Effect counters, OpenTelemetry names", async () => {
    const registry: Metric.MetricRegistry = new Map()
    const meter = new Meter(registry)
    const c = meter.instrument({ name: "t.c", description: "C.", unit: "1", kind: "counter" })
    const h = meter.instrument({ name: "t.h", description: "H.", unit: "s", kind: "histogram" }, [1])
    const g = meter.instrument({ name: "t.active", description: "A.", unit: "{request}", kind: "updown" })
    c.add(2, { code: 200 })
    c.add(4, { code: 200 })
    h.record(0.5, {})
    h.record(2, {})
    h.record(3, {})
    g.add(1, { "svc.service": "api" })
    g.add(1, { "svc.service": "api" })
    g.add(-1, { "svc.service": "api" })
    // An Effect counter updated from Effect code lands in the same registry.
    const effectCounter = counter("t.effect.dropped", "E.")
    await Effect.runPromise(
      Metric.update(effectCounter, 3).pipe(Effect.provideService(Metric.MetricRegistry, registry))
    )
    const text = TelemetryLayer.prometheusText(meter)
    expect(text).toContain("# TYPE t_c_total counter")
    expect(text).toContain('t_c_total{code="200"} 6')
    expect(text).toContain("# TYPE t_h_seconds histogram")
    expect(text).toContain('t_h_seconds_bucket{le="1"} 1')
    expect(text).toContain('t_h_seconds_bucket{le="+Inf"} 3')
    expect(text).toContain("t_h_seconds_count 3")
    expect(text).toContain("# TYPE t_active gauge")
    expect(text).toContain('t_active{svc_service="api"} 1')
    expect(text).toContain("t_effect_dropped_total 3")
    // effect's `unit` attribute gives OTLP its unit; it is never a Prometheus label.
    expect(text).not.toContain("unit=")
    expect(meter.series("t.h")).toEqual([{ attributes: {}, value: 5.5, count: 3 }])
  })

  it("records a failure escaping a handler as the exception event of its request's server span", () => {
    const pushed: Array<ExportedSpan> = []
    const tracer = makeTracer({ push: (span) => pushed.push(span) }, 1)
    const incoming = {} as IncomingMessage
    const server = tracer.start("HTTP GET", "server", undefined)
    records.set(incoming, { span: server, actorId: undefined })
    Effect.runSync(
      Effect.withFiber((fiber) => {
        recordRequestException(fiber, Cause.die(new TypeError("boom")))
        return Effect.void
      }).pipe(
        Effect.provideService(HttpServerRequest.HttpServerRequest, {
          source: incoming
        } as unknown as HttpServerRequest.HttpServerRequest)
      )
    )
    server.statusCode = StatusCode.Error
    server.end(1n, Exit.void)
    expect(pushed[0]?.exception).toEqual({ type: "TypeError", message: "boom" })
    const decoded = decodeTraces(Buffer.from(encodeTraces([], { name: "svc", version: "0" }, pushed)))
    expect(decoded[0]?.events).toEqual([
      { name: "exception", attributes: { "exception.type": "TypeError", "exception.message": "boom" } }
    ])
    expect(decoded[0]?.status.code).toBe(2)
  })

  it("puts a counter-store span with key names (never values) under the request's span", async () => {
    const pushed: Array<ExportedSpan> = []
    const tracer = makeTracer({ push: (span) => pushed.push(span) }, 1)
    const server = tracer.start("HTTP GET", "server", undefined)
    await Effect.runPromise(
      Effect.gen(function* () {
        const context = yield* Effect.context<never>()
        const client = yield* connectRedis(
          { url: "redis://127.0.0.1:6379", keyPrefix: `svc-test:${randomBytes(8).toString("hex")}:` },
          context
        )
        try {
          const store = makeRedisRateLimitStore(client, "redis", true)
          yield* store.check({ connectionId: "cxn_telemetry", rules: [] })
        } finally {
          client.disconnect()
        }
      }).pipe(Effect.provideService(Tracer.ParentSpan, server), Effect.provideService(Tracer.Tracer, tracer))
    )
    const span = pushed.find((s) => s.name === "counter_store.rate_limit_check")
    expect(span?.kind).toBe("client")
    expect(span?.parentSpanId).toBe(server.spanId)
    expect(Object.fromEntries(span?.attributes ?? [])).toEqual({
      "db.system.name": "redis",
      "db.operation.name": "EVALSHA",
      "svc.counter_store.keys": expect.stringContaining("cxn_telemetry")
    })
  })

  it("names the route of a request by its endpoint template, the same on a repeat", () => {
    const route = routeMatcher([
      { method: "GET", path: "/api/v1/connections/:id" },
      { method: "POST", path: "/api/v1/connections/:id/_proxy" }
    ])
    for (let i = 0; i < 2; i++) {
      expect(route("GET", "/api/v1/connections/cxn_1")).toBe("/api/v1/connections/:id")
      expect(route("HEAD", "/api/v1/connections/cxn_1")).toBe("/api/v1/connections/:id")
      expect(route("POST", "/api/v1/connections/cxn_1/_proxy")).toBe("/api/v1/connections/:id/_proxy")
      expect(route("GET", "/api/v1/connections/")).toBeUndefined()
      expect(route("DELETE", "/api/v1/connections/cxn_1")).toBeUndefined()
    }
  })

  it("reads a valid W3C traceparent only", () => {
    const good = parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
    expect(good).toMatchObject({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      spanId: "b7ad6b7169203331",
      sampled: true
    })
    expect(parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")?.sampled).toBe(false)
    expect(parseTraceparent("00-00000000000000000000000000000000-b7ad6b7169203331-01")).toBeUndefined()
    expect(parseTraceparent("garbage")).toBeUndefined()
  })
})
