/**
 * The OTLP protobuf encoding of svc's spans (`ExportTraceServiceRequest`, the body of both the
 * http/protobuf and the gRPC export), written straight from the ended spans into one growing
 * buffer. Spans are the one high-volume signal (two per proxied request with every trace
 * sampled); effect's general encoder builds an object tree per span first and measured about
 * 50 µs per span, this one about 2. Metrics and logs keep effect's encoder.
 */
import type { OtlpResource } from "effect/observability"

type KeyValue = OtlpResource.KeyValue

/** A protobuf writer: fields by number, nested messages by `fork`/`ldelim`. */
/** An 8-byte scratch for `fixed64`: a bigint stored there is truncated to 64 bits without allocating. */
const scratch64 = new BigUint64Array(1)
const scratch8 = new Uint8Array(scratch64.buffer)
const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

/** The value of each hex digit by char code (below 128); -1 for anything else. */
const hexDigits = new Int8Array(128).fill(-1)
for (let i = 0; i < 10; i++) hexDigits[48 + i] = i
for (let i = 0; i < 6; i++) {
  hexDigits[97 + i] = 10 + i
  hexDigits[65 + i] = 10 + i
}

export class ProtoWriter {
  private buf: Buffer
  private pos = 0
  private readonly stack: Array<number> = []

  constructor(buf: Buffer = Buffer.allocUnsafe(64 * 1024)) {
    this.buf = buf
  }

  /** Starts a new message over the same buffer (what `finish` returned is a copy, unaffected). */
  reset(): void {
    this.pos = 0
    this.stack.length = 0
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n))
    this.buf.copy(next, 0, 0, this.pos)
    this.buf = next
  }

  private raw(v: number): void {
    this.ensure(10)
    while (v > 127) {
      this.buf[this.pos++] = (v & 127) | 128
      v = Math.floor(v / 128)
    }
    this.buf[this.pos++] = v
  }

  private tag(field: number, wire: number): void {
    this.raw((field << 3) | wire)
  }

  uint(field: number, v: number): void {
    this.tag(field, 0)
    this.raw(v)
  }

  /** int64 as a varint (two's complement for negative values). */
  int(field: number, v: number): void {
    if (v >= 0 && Number.isSafeInteger(v)) {
      this.uint(field, v)
      return
    }
    this.tag(field, 0)
    let u = BigInt.asUintN(64, BigInt(Math.trunc(v)))
    this.ensure(10)
    while (u > 127n) {
      this.buf[this.pos++] = Number(u & 127n) | 128
      u >>= 7n
    }
    this.buf[this.pos++] = Number(u)
  }

  string(field: number, s: string): void {
    this.tag(field, 2)
    // Short ASCII text (names, keys, ids, methods: nearly every string here) is copied in JS, its
    // length one byte; anything else goes through Buffer's UTF-8 encoder.
    const length = s.length
    if (length < 128) {
      this.ensure(length + 1)
      const buf = this.buf
      const start = this.pos
      let at = start + 1
      let i = 0
      for (; i < length; i++) {
        const c = s.charCodeAt(i)
        if (c >= 0x80) break
        buf[at++] = c
      }
      if (i === length) {
        buf[start] = length
        this.pos = at
        return
      }
    }
    const n = Buffer.byteLength(s)
    this.raw(n)
    this.ensure(n)
    this.pos += this.buf.write(s, this.pos, "utf8")
  }

  hex(field: number, hex: string): void {
    const n = hex.length >>> 1
    this.tag(field, 2)
    this.raw(n)
    this.ensure(n)
    const buf = this.buf
    let at = this.pos
    for (let i = 0; i < hex.length; i += 2) {
      const high = hexDigits[hex.charCodeAt(i) & 127] as number
      const low = hexDigits[hex.charCodeAt(i + 1) & 127] as number
      if ((high | low) < 0) {
        // Not hex digits: Buffer's decoder decides, as before.
        this.pos += this.buf.write(hex, this.pos, "hex")
        return
      }
      buf[at++] = (high << 4) | low
    }
    this.pos = at
  }

  /** Bytes written as they are (an encoding made earlier by a writer). */
  bytes(src: Uint8Array): void {
    const n = src.length
    this.ensure(n)
    this.buf.set(src, this.pos)
    this.pos += n
  }

  fixed64(field: number, v: bigint): void {
    this.tag(field, 1)
    this.ensure(8)
    if (littleEndian) {
      scratch64[0] = v
      this.buf.set(scratch8, this.pos)
    } else this.buf.writeBigUInt64LE(BigInt.asUintN(64, v), this.pos)
    this.pos += 8
  }

  double(field: number, v: number): void {
    this.tag(field, 1)
    this.ensure(8)
    this.buf.writeDoubleLE(v, this.pos)
    this.pos += 8
  }

  /** Opens the nested message of `field`; `ldelim` closes it. */
  fork(field: number): void {
    this.tag(field, 2)
    this.ensure(1)
    this.stack.push(this.pos)
    this.pos += 1
  }

  ldelim(): void {
    const start = this.stack.pop()
    if (start === undefined) throw new Error("ldelim without fork")
    const length = this.pos - start - 1
    let size = 1
    for (let v = length; v > 127; v = Math.floor(v / 128)) size++
    if (size > 1) {
      this.ensure(size - 1)
      this.buf.copyWithin(start + size, start + 1, this.pos)
      this.pos += size - 1
    }
    let at = start
    let v = length
    while (v > 127) {
      this.buf[at++] = (v & 127) | 128
      v = Math.floor(v / 128)
    }
    this.buf[at] = v
  }

  finish(): Uint8Array {
    return new Uint8Array(this.buf.subarray(0, this.pos))
  }
}

/** `AnyValue` of a string, number, boolean or bigint (anything else as its string). */
export const writeAnyValue = (w: ProtoWriter, field: number, value: unknown): void => {
  w.fork(field)
  switch (typeof value) {
    case "string":
      w.string(1, value)
      break
    case "boolean":
      w.uint(2, value ? 1 : 0)
      break
    case "number":
      if (Number.isInteger(value)) w.int(3, value)
      else w.double(4, value)
      break
    case "bigint":
      w.int(3, Number(value))
      break
    default:
      w.string(1, String(value))
  }
  w.ldelim()
}

export const writeKeyValue = (w: ProtoWriter, field: number, key: string, value: unknown): void => {
  w.fork(field)
  w.string(1, key)
  writeAnyValue(w, 2, value)
  w.ldelim()
}

/** A span ready to encode (see `Tracing.ExportedSpan`). */
export interface EncodableSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  /** OTLP kind number. */
  readonly kindNumber: number
  readonly startNanos: bigint
  readonly endNanos: bigint
  /** key, value, key, value… (`Tracing.ExportedSpan.attributeList`). */
  readonly attributeList: ReadonlyArray<unknown>
  readonly exception: { readonly type: string; readonly message: string } | undefined
  /** Set by the time the span is pushed. */
  readonly statusCode: number | undefined
  readonly statusMessage: string | undefined
}

const resourceAttributes = (w: ProtoWriter, attributes: ReadonlyArray<KeyValue>) => {
  w.fork(1) // resource
  for (const kv of attributes) {
    const v = kv.value
    writeKeyValue(
      w,
      1,
      kv.key,
      v.stringValue ?? v.boolValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.doubleValue
    )
  }
  w.ldelim()
}

const traceWriter = new ProtoWriter()

/**
 * The encoded span attribute (field 9, a `KeyValue`) of a key and a primitive value: attributes
 * repeat (method, service, connector, connection, route, status), so each pair is encoded once
 * and then copied. At most `keyValueCap` pairs are kept; a full cache starts over (the pairs in
 * use come back at once, rare ones such as caller paths do not pile up).
 */
const keyValueCap = 4096
const keyValues = new Map<string, Map<unknown, Uint8Array>>()
let keyValueCount = 0
const keyValueWriter = new ProtoWriter(Buffer.allocUnsafe(1024))

const writeAttribute = (w: ProtoWriter, key: string, value: unknown): void => {
  const type = typeof value
  if ((type !== "string" || (value as string).length > 256) && type !== "number" && type !== "boolean") {
    writeKeyValue(w, 9, key, value)
    return
  }
  let byValue = keyValues.get(key)
  let bytes = byValue?.get(value)
  if (bytes === undefined) {
    if (keyValueCount >= keyValueCap) {
      keyValues.clear()
      keyValueCount = 0
      byValue = undefined
    }
    if (byValue === undefined) {
      byValue = new Map()
      keyValues.set(key, byValue)
    }
    keyValueWriter.reset()
    writeKeyValue(keyValueWriter, 9, key, value)
    bytes = keyValueWriter.finish()
    byValue.set(value, bytes)
    keyValueCount++
  }
  w.bytes(bytes)
}

/** `ExportTraceServiceRequest` of `spans` under one resource and scope. */
export const encodeTraces = (
  resource: ReadonlyArray<KeyValue>,
  scope: { readonly name: string; readonly version: string },
  spans: ReadonlyArray<EncodableSpan>
): Uint8Array => {
  // One writer for every export (encoding is synchronous): its buffer, grown to the largest
  // batch, is not allocated again per export; the result is a copy.
  const w = traceWriter
  w.reset()
  w.fork(1) // resource_spans
  resourceAttributes(w, resource)
  w.fork(2) // scope_spans
  w.fork(1) // scope
  w.string(1, scope.name)
  w.string(2, scope.version)
  w.ldelim()
  for (const s of spans) {
    w.fork(2) // span
    w.hex(1, s.traceId)
    w.hex(2, s.spanId)
    if (s.parentSpanId !== undefined) w.hex(4, s.parentSpanId)
    w.string(5, s.name)
    w.uint(6, s.kindNumber)
    w.fixed64(7, s.startNanos)
    w.fixed64(8, s.endNanos)
    const list = s.attributeList
    for (let i = 0; i < list.length; i += 2) writeAttribute(w, list[i] as string, list[i + 1])
    if (s.exception !== undefined) {
      w.fork(11) // event
      w.fixed64(1, s.endNanos)
      w.string(2, "exception")
      writeKeyValue(w, 3, "exception.type", s.exception.type)
      writeKeyValue(w, 3, "exception.message", s.exception.message)
      w.ldelim()
    }
    w.fork(15) // status
    if (s.statusMessage !== undefined) w.string(2, s.statusMessage)
    // The code even when unset (0), as effect's serializer writes it: the golden test compares bytes.
    w.uint(3, s.statusCode ?? 0)
    w.ldelim()
    w.ldelim()
  }
  w.ldelim()
  w.ldelim()
  return w.finish()
}
