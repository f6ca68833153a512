/**
 * The streaming measurements of the proxy rows, each on one keep-alive undici connection from the
 * bench process: a large POST body sent with a `content-length` and drained by the upstream (MB/s
 * from request start to the byte-count answer, checked against what was sent), and server-sent
 * events (time from request start to the first event's bytes, the whole stream read and checked).
 * Bounded per request; failures are counted, never thrown.
 */
import { Readable } from "node:stream"
import { Client } from "undici"
import { percentile } from "./Load.ts"
import { nowMs } from "./Ready.ts"

/** One request as sent to a target (after the target's routing). */
export interface SentRequest {
  readonly method: "GET" | "POST"
  readonly path: string
  readonly headers: Readonly<Record<string, string>>
}

export interface UploadResult {
  readonly bytes: number
  readonly runs: number
  readonly errors: number
  /** Median over the successful runs (10^6 bytes per second). */
  readonly mbPerS: number
  readonly bestMbPerS: number
  /** MB/s of each successful run, in order. */
  readonly samples: ReadonlyArray<number>
  /** The first failure, when any (status and a short body, or the transport error). */
  readonly firstError?: string
}

export interface FirstByteResult {
  readonly samples: number
  readonly errors: number
  readonly p50Ms: number
  readonly p90Ms: number
  readonly maxMs: number
  /** Whole stream, request start to last byte, median. */
  readonly streamP50Ms: number
  readonly firstError?: string
}

const chunkBytes = 64 * 1024
const chunk = Buffer.alloc(chunkBytes, "svc-bench-stream ")

async function* bodyOf(bytes: number): AsyncGenerator<Buffer> {
  for (let left = bytes; left > 0; left -= chunkBytes) yield left >= chunkBytes ? chunk : chunk.subarray(0, left)
}

const median = (values: ReadonlyArray<number>) => percentile(Float64Array.from(values).sort(), 50)

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** `runs` POSTs of `bytes` each (after one 1 MB warm-up); the answer must be `{"bytes": <bytes>}`. */
export const measureUpload = async (
  origin: string,
  request: SentRequest,
  bytes: number,
  runs: number
): Promise<UploadResult> => {
  const client = new Client(origin, { keepAliveTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 120_000 })
  const samples: Array<number> = []
  let errors = 0
  let firstError: string | undefined
  const once = async (size: number): Promise<number | string> => {
    const t0 = nowMs()
    try {
      const response = await client.request({
        method: request.method,
        path: request.path,
        headers: { ...request.headers, "content-type": "application/octet-stream", "content-length": String(size) },
        body: Readable.from(bodyOf(size), { objectMode: false })
      })
      const text = await response.body.text()
      const ms = nowMs() - t0
      if (response.statusCode !== 200) return `status ${response.statusCode}: ${text.slice(0, 200)}`
      const answered = (JSON.parse(text) as { bytes?: unknown }).bytes
      if (answered !== size) return `the upstream counted ${String(answered)} bytes of ${size}`
      return size / 1e6 / (ms / 1000)
    } catch (error) {
      return describe(error)
    }
  }
  try {
    const warm = await once(1_000_000)
    if (typeof warm === "string")
      return { bytes, runs, errors: runs, mbPerS: 0, bestMbPerS: 0, samples, firstError: warm }
    for (let i = 0; i < runs; i++) {
      const outcome = await once(bytes)
      if (typeof outcome === "number") samples.push(outcome)
      else {
        errors++
        firstError ??= outcome
      }
    }
  } finally {
    await client.destroy()
  }
  return {
    bytes,
    runs,
    errors,
    mbPerS: samples.length === 0 ? 0 : median(samples),
    bestMbPerS: samples.length === 0 ? 0 : Math.max(...samples),
    samples,
    ...(firstError === undefined ? {} : { firstError })
  }
}

/**
 * `warmup` then `samples` GETs of an SSE stream of `events` events; each measured one records the
 * time to the first body bytes (which must hold the first event) and to the end of the stream.
 */
export const measureFirstByte = async (
  origin: string,
  request: SentRequest,
  options: { readonly warmup: number; readonly samples: number; readonly events: number }
): Promise<FirstByteResult> => {
  const client = new Client(origin, { keepAliveTimeout: 60_000, headersTimeout: 10_000, bodyTimeout: 10_000 })
  const first: Array<number> = []
  const whole: Array<number> = []
  let errors = 0
  let firstError: string | undefined
  try {
    for (let i = 0; i < options.warmup + options.samples; i++) {
      const t0 = nowMs()
      let firstAt = 0
      let failure: string | undefined
      try {
        const response = await client.request({
          method: request.method,
          path: request.path,
          headers: { ...request.headers, accept: "text/event-stream" }
        })
        let text = ""
        for await (const data of response.body) {
          if (firstAt === 0) firstAt = nowMs()
          text += (data as Buffer).toString("utf8")
        }
        const seen = text.split("\n\n").filter((event) => event.includes("data: ")).length
        if (response.statusCode !== 200) failure = `status ${response.statusCode}: ${text.slice(0, 200)}`
        else if (!text.startsWith("id: 1\n")) failure = `the stream did not start with the first event`
        else if (seen !== options.events) failure = `${seen} events instead of ${options.events}`
      } catch (error) {
        failure = describe(error)
      }
      if (i < options.warmup) continue
      if (failure !== undefined) {
        errors++
        firstError ??= failure
        continue
      }
      first.push(firstAt - t0)
      whole.push(nowMs() - t0)
    }
  } finally {
    await client.destroy()
  }
  const sorted = Float64Array.from(first).sort()
  return {
    samples: options.samples,
    errors,
    p50Ms: percentile(sorted, 50),
    p90Ms: percentile(sorted, 90),
    maxMs: sorted.length === 0 ? 0 : (sorted[sorted.length - 1] ?? 0),
    streamP50Ms: whole.length === 0 ? 0 : median(whole),
    ...(firstError === undefined ? {} : { firstError })
  }
}
