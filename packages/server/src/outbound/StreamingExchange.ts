/**
 * Dispatches a prepared request whose bodies stream both ways (`_proxy_raw`, spec 4.2): the
 * request body is read as the upstream accepts it, the response body is a {@link RelayBody} written
 * straight to the caller's response, which pauses the upstream when the caller reads slowly
 * (back-pressure reaches the upstream socket) and aborts the upstream exchange when the caller
 * goes away. Connect and first-byte deadlines are wall-clock
 * timers, the first-byte one from the moment the request body has been sent; after the headers, the connector's total timeout bounds each silence between chunks
 * (a stream such as server-sent events may last longer than any single deadline).
 */
import type { Dispatcher } from "undici"
import type { ExchangeCallbacks } from "./ExchangeCallbacks.ts"
import { OutboundError, type OutboundErrorReason } from "./OutboundError.ts"
import type { PreparedOutbound } from "./OutboundGuard.ts"
import { RelayBody, type Trailers } from "./RelayBody.ts"
import { chunkRelayed } from "./RelayedChunks.ts"
import { clampMs, dispatchFailure, type OutboundTimeouts, responseHeaders } from "./ResponseCollector.ts"

/** How a streamed exchange ended, once its body is over. */
export interface StreamOutcome {
  /** Bytes of the response body the upstream sent. */
  readonly bytes: number
  /** Why the body did not complete (caller gone, upstream reset, silence), when it did not. */
  readonly error?: string
}

/** An upstream answer whose body is still streaming. */
export interface StreamedResponse {
  readonly status: number
  readonly headers: Record<string, string | ReadonlyArray<string>>
  readonly body: RelayBody
  /** Settles once the body ended, failed or was abandoned; never rejects. */
  readonly done: Promise<StreamOutcome>
}

/** Per-chunk observer of the response body (recording); must be cheap. */
export type ChunkObserver = (chunk: Uint8Array) => void

/**
 * Where a `103 Early Hints` of the upstream goes before the answer (the caller's Node response);
 * other informational answers are not relayed.
 */
export interface InformationalSink {
  readonly headersSent: boolean
  readonly destroyed: boolean
  writeEarlyHints(hints: Record<string, string | ReadonlyArray<string>>): void
}

/**
 * Sends `prepared` through `dispatcher` in plain code (the proxy's fast path): `callbacks.onAnswer`
 * as soon as the response head arrives, or `callbacks.onFailure`. Answers a function that
 * abandons the exchange before its head arrived (the caller went away); it does nothing after.
 */
export const startStreamExchange = (
  dispatcher: Dispatcher,
  prepared: PreparedOutbound,
  timeouts: OutboundTimeouts,
  onChunk: ChunkObserver | undefined,
  callbacks: ExchangeCallbacks<StreamedResponse>,
  informational?: InformationalSink
): (() => void) => {
  const exchange = new StreamExchange(prepared, timeouts, onChunk, callbacks, informational)
  try {
    dispatcher.dispatch({ ...prepared.dispatch, headersTimeout: 0, bodyTimeout: clampMs(timeouts.totalMs) }, exchange)
  } catch (error) {
    const failure = dispatchFailure(error, false)
    exchange.failExchange(failure.reason, failure.detail)
  }
  return exchange.abandon
}

/**
 * One streamed exchange: undici's handler and the state it keeps, in one object (one is made per
 * proxied request, so its methods are on the prototype rather than closures per request).
 */
class StreamExchange implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined
  private settled = false
  private started = false
  private bytes = 0
  private ended = false
  private body: RelayBody | undefined
  private timer: ReturnType<typeof setTimeout> | undefined
  private timerDetail = ""
  private resolveDone: ((outcome: StreamOutcome) => void) | undefined
  private outcome: StreamOutcome | undefined

  private readonly prepared: PreparedOutbound
  private readonly timeouts: OutboundTimeouts
  private readonly onChunk: ChunkObserver | undefined
  private readonly callbacks: ExchangeCallbacks<StreamedResponse>
  private readonly informational: InformationalSink | undefined

  constructor(
    prepared: PreparedOutbound,
    timeouts: OutboundTimeouts,
    onChunk: ChunkObserver | undefined,
    callbacks: ExchangeCallbacks<StreamedResponse>,
    informational: InformationalSink | undefined
  ) {
    this.prepared = prepared
    this.timeouts = timeouts
    this.onChunk = onChunk
    this.callbacks = callbacks
    this.informational = informational
    this.arm(timeouts.connectMs, `no connection within ${timeouts.connectMs} ms`)
  }

  /** Settles `done` (once; the promise is made only when the answer is handed over). */
  private settleDone(outcome: StreamOutcome) {
    if (this.outcome !== undefined) return
    this.outcome = outcome
    this.resolveDone?.(outcome)
  }

  private stopTimer() {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
  }

  private abortExchange(why: string) {
    const controller = this.controller
    if (controller !== undefined && !controller.aborted) controller.abort(new Error(why))
  }

  failExchange(reason: OutboundErrorReason, detail: string) {
    if (this.settled) return
    this.settled = true
    this.stopTimer()
    this.callbacks.onFailure(new OutboundError({ reason, target: this.prepared.target, detail }))
    this.settleDone({ bytes: 0, error: detail })
  }

  private readonly expired = () => {
    this.failExchange("timeout", this.timerDetail)
    this.abortExchange(this.timerDetail)
  }

  private arm(ms: number, detail: string) {
    this.stopTimer()
    this.timerDetail = detail
    this.timer = setTimeout(this.expired, clampMs(ms))
  }

  /** The caller went away before the head: the exchange is abandoned (nothing happens after the head). */
  readonly abandon = (): void => {
    if (this.settled) return
    this.settled = true
    this.stopTimer()
    this.abortExchange("outbound request abandoned")
    this.settleDone({ bytes: 0, error: "abandoned" })
  }

  onRequestStart(c: Dispatcher.DispatchController) {
    this.controller = c
    if (this.settled) {
      c.abort(new Error("outbound request abandoned"))
      return
    }
    this.started = true
    // The connect deadline is met; the first-byte deadline starts once the request body has
    // been sent (`onRequestSent`): a slow upload is not the upstream's silence.
    this.stopTimer()
  }

  onRequestSent() {
    if (!this.settled) this.arm(this.timeouts.firstByteMs, `no response headers within ${this.timeouts.firstByteMs} ms`)
  }

  onResponseStart(
    c: Dispatcher.DispatchController,
    statusCode: number,
    rawHeaders: Record<string, string | Array<string> | undefined>
  ) {
    if (this.settled) return
    if (statusCode < 200) {
      if (statusCode === 103 && this.informational !== undefined) earlyHints(this.informational, rawHeaders)
      return
    }
    this.settled = true
    this.stopTimer()
    const body = new RelayBody(c, () => {
      if (!c.aborted && !this.ended) {
        c.abort(new Error("the caller stopped reading"))
        this.settleDone({ bytes: this.bytes, error: "the caller went away" })
      }
    })
    this.body = body
    const done = new Promise<StreamOutcome>((resolve) => {
      if (this.outcome !== undefined) resolve(this.outcome)
      else this.resolveDone = resolve
    })
    this.callbacks.onAnswer({ status: statusCode, headers: responseHeaders(rawHeaders), body, done })
  }

  onBodySent(chunk: Uint8Array | string) {
    chunkRelayed(typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.byteLength)
  }

  onResponseData(_c: Dispatcher.DispatchController, chunk: Buffer) {
    const body = this.body
    if (body === undefined || body.destroyed) return
    this.bytes += chunk.byteLength
    chunkRelayed(chunk.byteLength)
    this.onChunk?.(chunk)
    body.push(chunk)
  }

  onResponseEnd(_c: Dispatcher.DispatchController, trailers: Record<string, string | Array<string> | undefined>) {
    this.ended = true
    if (this.body === undefined) return
    this.body.end(hasFields(trailers) ? (trailers as Trailers) : undefined)
    this.settleDone({ bytes: this.bytes })
  }

  onResponseError(_c: Dispatcher.DispatchController, error: Error) {
    const failure = dispatchFailure(error, this.started)
    if (!this.settled) {
      this.failExchange(failure.reason, failure.detail)
      return
    }
    this.ended = true
    this.settleDone({ bytes: this.bytes, error: failure.detail })
    this.body?.cut()
  }
}

const hasFields = (fields: object | undefined | null): boolean => {
  if (fields === undefined || fields === null) return false
  for (const _ in fields) return true
  return false
}

/**
 * Relays a `103 Early Hints` (RFC 8297) to the caller before the answer, its hop-by-hop and
 * `X-Svc-*` fields dropped; only while the caller's head is not written. A hint Node refuses
 * (no or an invalid `Link`) is dropped.
 */
const earlyHints = (
  sink: InformationalSink,
  rawHeaders: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
) => {
  if (sink.headersSent || sink.destroyed) return
  const hints = responseHeaders(rawHeaders)
  for (const name in hints) if (name.startsWith("x-svc-")) delete hints[name]
  try {
    sink.writeEarlyHints(hints)
  } catch {}
}
