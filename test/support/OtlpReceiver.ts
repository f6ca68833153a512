/**
 * An in-process OpenTelemetry collector for tests: OTLP over gRPC (`TraceService/Export`,
 * `MetricsService/Export`, `LogsService/Export` on `@grpc/grpc-js`) or over HTTP (`POST
 * /v1/traces|metrics|logs`, protobuf bodies). Every received message is kept as raw bytes (for
 * leak scans) and decoded with protobufjs and the official opentelemetry-proto definitions (an
 * oracle independent of svc's encoders) into the spans, metric points and log records the tests
 * assert on. The gRPC metadata and HTTP headers of each export are kept too.
 */
import * as grpc from "@grpc/grpc-js"
import * as http from "node:http"
import { createRequire } from "node:module"

// ---------------------------------------------------------------------------------------------
// Decoding: protobufjs over the official opentelemetry-proto definitions (compiled by
// OpenTelemetry's JavaScript project into `@opentelemetry/otlp-transformer`), never svc's code.

type Json = Record<string, unknown> & { readonly [key: string]: unknown }
interface MessageType {
  decode(bytes: Uint8Array): unknown
  toObject(message: unknown, options: Record<string, unknown>): Json
}
const proto = createRequire(import.meta.url)("@opentelemetry/otlp-transformer/build/src/generated/root.js")
  .opentelemetry.proto.collector as Record<string, { v1: Record<string, MessageType> }>

const decodeRequest = (type: MessageType, bytes: Buffer): Json =>
  type.toObject(type.decode(bytes), { longs: String, enums: Number, bytes: String, defaults: false, arrays: true })

const list = (value: unknown): Array<Json> => (Array.isArray(value) ? (value as Array<Json>) : [])
const text = (value: unknown): string => (typeof value === "string" ? value : "")
const hexOf = (base64: unknown): string => Buffer.from(text(base64), "base64").toString("hex")

export type AttrValue = string | number | boolean | null

const anyValue = (v: Json | undefined): AttrValue => {
  if (v === undefined) return null
  if (v.stringValue !== undefined) return text(v.stringValue)
  if (v.boolValue !== undefined) return v.boolValue === true
  if (v.intValue !== undefined) return Number(v.intValue)
  if (v.doubleValue !== undefined) return Number(v.doubleValue)
  return null
}

const attributes = (value: unknown): Record<string, AttrValue> => {
  const out: Record<string, AttrValue> = {}
  for (const kv of list(value)) out[text(kv.key)] = anyValue(kv.value as Json | undefined)
  return out
}

const resourceOf = (r: Json): Record<string, AttrValue> => attributes((r.resource as Json | undefined)?.attributes)

// ---------------------------------------------------------------------------------------------
// OTLP

export interface ReceivedSpan {
  readonly resource: Record<string, AttrValue>
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string
  readonly name: string
  /** 1 internal, 2 server, 3 client. */
  readonly kind: number
  readonly startNanos: bigint
  readonly endNanos: bigint
  readonly attributes: Record<string, AttrValue>
  readonly events: ReadonlyArray<{ readonly name: string; readonly attributes: Record<string, AttrValue> }>
  /** 0 unset, 1 ok, 2 error. */
  readonly status: { readonly code: number; readonly message: string }
}

export interface ReceivedPoint {
  readonly resource: Record<string, AttrValue>
  readonly metric: string
  readonly unit: string
  readonly type: "sum" | "gauge" | "histogram"
  /** 1 delta, 2 cumulative (sums and histograms). */
  readonly temporality: number
  readonly attributes: Record<string, AttrValue>
  /** Sums and gauges: the value; histograms: the sum. */
  readonly value: number
  /** Histograms: the observation count. */
  readonly count: number
}

export interface ReceivedLog {
  readonly resource: Record<string, AttrValue>
  readonly body: AttrValue
  readonly severityText: string
  readonly traceId: string
  readonly spanId: string
  readonly attributes: Record<string, AttrValue>
}

export const decodeTraces = (buf: Buffer): Array<ReceivedSpan> => {
  const out: Array<ReceivedSpan> = []
  const request = decodeRequest(proto.trace!.v1.ExportTraceServiceRequest!, buf)
  for (const rs of list(request.resourceSpans)) {
    const resource = resourceOf(rs)
    for (const ss of list(rs.scopeSpans)) {
      for (const s of list(ss.spans)) {
        const status = (s.status as Json | undefined) ?? {}
        out.push({
          resource,
          traceId: hexOf(s.traceId),
          spanId: hexOf(s.spanId),
          parentSpanId: hexOf(s.parentSpanId),
          name: text(s.name),
          kind: Number(s.kind ?? 0),
          startNanos: BigInt(text(s.startTimeUnixNano) || "0"),
          endNanos: BigInt(text(s.endTimeUnixNano) || "0"),
          attributes: attributes(s.attributes),
          events: list(s.events).map((e) => ({ name: text(e.name), attributes: attributes(e.attributes) })),
          status: { code: Number(status.code ?? 0), message: text(status.message) }
        })
      }
    }
  }
  return out
}

const numberPoint = (p: Json): number =>
  p.asDouble !== undefined ? Number(p.asDouble) : p.asInt !== undefined ? Number(p.asInt) : 0

export const decodeMetrics = (buf: Buffer): Array<ReceivedPoint> => {
  const out: Array<ReceivedPoint> = []
  const request = decodeRequest(proto.metrics!.v1.ExportMetricsServiceRequest!, buf)
  for (const rm of list(request.resourceMetrics)) {
    const resource = resourceOf(rm)
    for (const sm of list(rm.scopeMetrics)) {
      for (const metric of list(sm.metrics)) {
        const base = { resource, metric: text(metric.name), unit: text(metric.unit) }
        const gauge = metric.gauge as Json | undefined
        const sum = metric.sum as Json | undefined
        const histogram = metric.histogram as Json | undefined
        for (const p of list(gauge?.dataPoints)) {
          out.push({
            ...base,
            type: "gauge",
            temporality: 0,
            attributes: attributes(p.attributes),
            value: numberPoint(p),
            count: 0
          })
        }
        for (const p of list(sum?.dataPoints)) {
          out.push({
            ...base,
            type: "sum",
            temporality: Number(sum?.aggregationTemporality ?? 0),
            attributes: attributes(p.attributes),
            value: numberPoint(p),
            count: 0
          })
        }
        for (const p of list(histogram?.dataPoints)) {
          out.push({
            ...base,
            type: "histogram",
            temporality: Number(histogram?.aggregationTemporality ?? 0),
            attributes: attributes(p.attributes),
            value: Number(p.sum ?? 0),
            count: Number(p.count ?? 0)
          })
        }
      }
    }
  }
  return out
}

export const decodeLogs = (buf: Buffer): Array<ReceivedLog> => {
  const out: Array<ReceivedLog> = []
  const request = decodeRequest(proto.logs!.v1.ExportLogsServiceRequest!, buf)
  for (const rl of list(request.resourceLogs)) {
    const resource = resourceOf(rl)
    for (const sl of list(rl.scopeLogs)) {
      for (const r of list(sl.logRecords)) {
        out.push({
          resource,
          body: anyValue(r.body as Json | undefined),
          severityText: text(r.severityText),
          traceId: hexOf(r.traceId),
          spanId: hexOf(r.spanId),
          attributes: attributes(r.attributes)
        })
      }
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// The receiver

export type Signal = "traces" | "metrics" | "logs"

export interface Export {
  readonly signal: Signal
  readonly bytes: Buffer
  /** gRPC metadata or HTTP headers of the export, lower-case names. */
  readonly headers: Readonly<Record<string, string>>
}

export interface OtlpReceiver {
  readonly protocol: "grpc" | "http/protobuf"
  /** What to configure as `telemetry.exporter.endpoint`. */
  readonly endpoint: string
  readonly exports: () => ReadonlyArray<Export>
  readonly spans: () => Array<ReceivedSpan>
  readonly points: () => Array<ReceivedPoint>
  readonly logs: () => Array<ReceivedLog>
  readonly close: () => Promise<void>
}

const view = (exports: Array<Export>) => ({
  exports: () => exports,
  spans: () => exports.filter((e) => e.signal === "traces").flatMap((e) => decodeTraces(e.bytes)),
  points: () => exports.filter((e) => e.signal === "metrics").flatMap((e) => decodeMetrics(e.bytes)),
  logs: () => exports.filter((e) => e.signal === "logs").flatMap((e) => decodeLogs(e.bytes))
})

/** How the HTTP receiver answers an export (default 200); a non-2xx export is still recorded. */
export type Answer = (signal: Signal) => { readonly status: number; readonly headers?: Record<string, string> }

/** A collector on `127.0.0.1` speaking OTLP/HTTP with protobuf bodies, answering with `answer`. */
export const startHttpReceiver = async (answer?: Answer): Promise<OtlpReceiver> => {
  const exports: Array<Export> = []
  const server = http.createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (c: Buffer) => chunks.push(c))
    request.on("end", () => {
      const signal = /^\/v1\/(traces|metrics|logs)$/.exec(request.url ?? "")?.[1] as Signal | undefined
      if (request.method !== "POST" || signal === undefined) {
        response.writeHead(404).end()
        return
      }
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(request.headers)) if (typeof v === "string") headers[k] = v
      exports.push({ signal, bytes: Buffer.concat(chunks), headers })
      const answered = answer?.(signal) ?? { status: 200 }
      response.writeHead(answered.status, { "content-type": "application/x-protobuf", ...answered.headers }).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const address = server.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    protocol: "http/protobuf",
    endpoint: `http://127.0.0.1:${port}`,
    ...view(exports),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

const identity = (b: Buffer) => b

/** A collector on `127.0.0.1` speaking OTLP/gRPC (plain text). */
export const startGrpcReceiver = async (): Promise<OtlpReceiver> => {
  const exports: Array<Export> = []
  const server = new grpc.Server()
  const method = (service: string, signal: Signal): grpc.MethodDefinition<Buffer, Buffer> => ({
    path: `/opentelemetry.proto.collector.${signal === "traces" ? "trace" : signal}.v1.${service}/Export`,
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity
  })
  const handler =
    (signal: Signal): grpc.handleUnaryCall<Buffer, Buffer> =>
    (call, callback) => {
      const headers: Record<string, string> = {}
      for (const [k, v] of Object.entries(call.metadata.getMap())) headers[k] = String(v)
      exports.push({ signal, bytes: Buffer.from(call.request), headers })
      callback(null, Buffer.alloc(0))
    }
  server.addService({ Export: method("TraceService", "traces") }, { Export: handler("traces") })
  server.addService({ Export: method("MetricsService", "metrics") }, { Export: handler("metrics") })
  server.addService({ Export: method("LogsService", "logs") }, { Export: handler("logs") })
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error === null ? resolve(bound) : reject(error)
    )
  )
  return {
    protocol: "grpc",
    endpoint: `127.0.0.1:${port}`,
    ...view(exports),
    close: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve())
        setTimeout(() => {
          server.forceShutdown()
          resolve()
        }, 2000).unref()
      })
  }
}
