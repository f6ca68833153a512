/**
 * An in-process OpenTelemetry collector for tests: OTLP over gRPC (`TraceService/Export`,
 * `MetricsService/Export`, `LogsService/Export` on `@grpc/grpc-js`) or over HTTP (`POST
 * /v1/traces|metrics|logs`, protobuf bodies). Every received message is kept as raw bytes (for
 * leak scans) and decoded with a small protobuf wire-format reader into the spans, metric points
 * and log records the tests assert on. The gRPC metadata and HTTP headers of each export are
 * kept too.
 */
import * as grpc from "@grpc/grpc-js"
import * as http from "node:http"

// ---------------------------------------------------------------------------------------------
// Protobuf wire format

type Field = { readonly wire: 0; readonly varint: bigint } | { readonly wire: 1 | 2 | 5; readonly bytes: Buffer }

type Message = Map<number, Array<Field>>

const readVarint = (buf: Buffer, at: { i: number }): bigint => {
  let result = 0n
  let shift = 0n
  for (;;) {
    const byte = buf[at.i++]
    if (byte === undefined) throw new Error("truncated varint")
    result |= BigInt(byte & 0x7f) << shift
    if ((byte & 0x80) === 0) return result
    shift += 7n
  }
}

export const decodeMessage = (buf: Buffer): Message => {
  const out: Message = new Map()
  const at = { i: 0 }
  while (at.i < buf.length) {
    const key = Number(readVarint(buf, at))
    const no = key >>> 3
    const wire = key & 7
    let field: Field
    switch (wire) {
      case 0:
        field = { wire: 0, varint: readVarint(buf, at) }
        break
      case 1:
        field = { wire: 1, bytes: buf.subarray(at.i, at.i + 8) }
        at.i += 8
        break
      case 2: {
        const length = Number(readVarint(buf, at))
        field = { wire: 2, bytes: buf.subarray(at.i, at.i + length) }
        at.i += length
        break
      }
      case 5:
        field = { wire: 5, bytes: buf.subarray(at.i, at.i + 4) }
        at.i += 4
        break
      default:
        throw new Error(`unsupported wire type ${wire}`)
    }
    const list = out.get(no)
    if (list === undefined) out.set(no, [field])
    else list.push(field)
  }
  return out
}

const all = (m: Message, no: number): Array<Field> => m.get(no) ?? []
const one = (m: Message, no: number): Field | undefined => all(m, no)[0]
const bytesOf = (f: Field | undefined): Buffer => (f !== undefined && f.wire !== 0 ? f.bytes : Buffer.alloc(0))
const str = (m: Message, no: number): string => bytesOf(one(m, no)).toString("utf8")
const hex = (m: Message, no: number): string => bytesOf(one(m, no)).toString("hex")
const sub = (m: Message, no: number): Array<Message> => all(m, no).map((f) => decodeMessage(bytesOf(f)))
const varint = (m: Message, no: number): number => {
  const f = one(m, no)
  return f !== undefined && f.wire === 0 ? Number(f.varint) : 0
}
const fixed64 = (m: Message, no: number): bigint => {
  const b = bytesOf(one(m, no))
  return b.length === 8 ? b.readBigUInt64LE(0) : 0n
}
const double = (m: Message, no: number): number | undefined => {
  const b = bytesOf(one(m, no))
  return b.length === 8 ? b.readDoubleLE(0) : undefined
}

export type AttrValue = string | number | boolean | null

const anyValue = (m: Message): AttrValue => {
  if (m.has(1)) return str(m, 1)
  if (m.has(2)) return varint(m, 2) !== 0
  if (m.has(3)) return varint(m, 3)
  if (m.has(4)) return double(m, 4) ?? null
  return null
}

const attributes = (m: Message, no: number): Record<string, AttrValue> => {
  const out: Record<string, AttrValue> = {}
  for (const kv of sub(m, no)) {
    const value = sub(kv, 2)[0]
    out[str(kv, 1)] = value === undefined ? null : anyValue(value)
  }
  return out
}

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
  for (const rs of sub(decodeMessage(buf), 1)) {
    const resource = attributes(sub(rs, 1)[0] ?? new Map(), 1)
    for (const ss of sub(rs, 2)) {
      for (const s of sub(ss, 2)) {
        const status = sub(s, 15)[0] ?? new Map()
        out.push({
          resource,
          traceId: hex(s, 1),
          spanId: hex(s, 2),
          parentSpanId: hex(s, 4),
          name: str(s, 5),
          kind: varint(s, 6),
          startNanos: fixed64(s, 7),
          endNanos: fixed64(s, 8),
          attributes: attributes(s, 9),
          events: sub(s, 11).map((e) => ({ name: str(e, 2), attributes: attributes(e, 3) })),
          status: { code: varint(status, 3), message: str(status, 2) }
        })
      }
    }
  }
  return out
}

const numberPoint = (p: Message): number => {
  const d = double(p, 4)
  if (d !== undefined) return d
  const b = bytesOf(one(p, 6))
  return b.length === 8 ? Number(b.readBigInt64LE(0)) : 0
}

export const decodeMetrics = (buf: Buffer): Array<ReceivedPoint> => {
  const out: Array<ReceivedPoint> = []
  for (const rm of sub(decodeMessage(buf), 1)) {
    const resource = attributes(sub(rm, 1)[0] ?? new Map(), 1)
    for (const sm of sub(rm, 2)) {
      for (const metric of sub(sm, 2)) {
        const base = { resource, metric: str(metric, 1), unit: str(metric, 3) }
        for (const g of sub(metric, 5)) {
          for (const p of sub(g, 1)) {
            out.push({
              ...base,
              type: "gauge",
              temporality: 0,
              attributes: attributes(p, 7),
              value: numberPoint(p),
              count: 0
            })
          }
        }
        for (const s of sub(metric, 7)) {
          const temporality = varint(s, 2)
          for (const p of sub(s, 1)) {
            out.push({
              ...base,
              type: "sum",
              temporality,
              attributes: attributes(p, 7),
              value: numberPoint(p),
              count: 0
            })
          }
        }
        for (const h of sub(metric, 9)) {
          const temporality = varint(h, 2)
          for (const p of sub(h, 1)) {
            out.push({
              ...base,
              type: "histogram",
              temporality,
              attributes: attributes(p, 9),
              value: double(p, 5) ?? 0,
              count: Number(fixed64(p, 4))
            })
          }
        }
      }
    }
  }
  return out
}

export const decodeLogs = (buf: Buffer): Array<ReceivedLog> => {
  const out: Array<ReceivedLog> = []
  for (const rl of sub(decodeMessage(buf), 1)) {
    const resource = attributes(sub(rl, 1)[0] ?? new Map(), 1)
    for (const sl of sub(rl, 2)) {
      for (const r of sub(sl, 2)) {
        const body = sub(r, 5)[0]
        out.push({
          resource,
          body: body === undefined ? null : anyValue(body),
          severityText: str(r, 3),
          traceId: hex(r, 9),
          spanId: hex(r, 10),
          attributes: attributes(r, 6)
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

/** A collector on `127.0.0.1` speaking OTLP/HTTP with protobuf bodies. */
export const startHttpReceiver = async (): Promise<OtlpReceiver> => {
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
      response.writeHead(200, { "content-type": "application/x-protobuf" }).end()
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
