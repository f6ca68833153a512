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
  let controller: Dispatcher.DispatchController | undefined
  let settled = false
  let started = false
  let bytes = 0
  let ended = false
  let body: RelayBody | undefined
  let finish: (outcome: StreamOutcome) => void = () => {}
  const done = new Promise<StreamOutcome>((resolve) => {
    finish = resolve
  })
  let timer: ReturnType<typeof setTimeout> | undefined
  const stopTimer = () => {
    if (timer !== undefined) clearTimeout(timer)
    timer = undefined
  }
  const abort = (why: string) => {
    if (controller !== undefined && !controller.aborted) controller.abort(new Error(why))
  }
  const fail = (reason: OutboundErrorReason, detail: string) => {
    if (settled) return
    settled = true
    stopTimer()
    callbacks.onFailure(new OutboundError({ reason, target: prepared.target, detail }))
    finish({ bytes: 0, error: detail })
  }
  const arm = (ms: number, detail: string) => {
    stopTimer()
    timer = setTimeout(() => {
      fail("timeout", detail)
      abort(detail)
    }, clampMs(ms))
  }
  arm(timeouts.connectMs, `no connection within ${timeouts.connectMs} ms`)

  const handler: Dispatcher.DispatchHandler = {
    onRequestStart(c) {
      controller = c
      if (settled) {
        c.abort(new Error("outbound request abandoned"))
        return
      }
      started = true
      // The connect deadline is met; the first-byte deadline starts once the request body has
      // been sent (`onRequestSent`): a slow upload is not the upstream's silence.
      stopTimer()
    },
    onRequestSent() {
      if (!settled) arm(timeouts.firstByteMs, `no response headers within ${timeouts.firstByteMs} ms`)
    },
    onResponseStart(c, statusCode, rawHeaders) {
      if (settled) return
      if (statusCode < 200) {
        if (statusCode === 103 && informational !== undefined) earlyHints(informational, rawHeaders)
        return
      }
      settled = true
      stopTimer()
      body = new RelayBody(c, () => {
        if (!c.aborted && !ended) {
          c.abort(new Error("the caller stopped reading"))
          finish({ bytes, error: "the caller went away" })
        }
      })
      callbacks.onAnswer({ status: statusCode, headers: responseHeaders(rawHeaders), body, done })
    },
    onBodySent(chunk) {
      chunkRelayed(chunk.byteLength)
    },
    onResponseData(_c, chunk) {
      if (body === undefined || body.destroyed) return
      bytes += chunk.byteLength
      chunkRelayed(chunk.byteLength)
      onChunk?.(chunk)
      body.push(chunk)
    },
    onResponseEnd(_c, trailers) {
      ended = true
      if (body === undefined) return
      body.end(hasFields(trailers) ? (trailers as Trailers) : undefined)
      finish({ bytes })
    },
    onResponseError(_c, error) {
      const failure = dispatchFailure(error, started)
      if (!settled) {
        fail(failure.reason, failure.detail)
        return
      }
      ended = true
      finish({ bytes, error: failure.detail })
      body?.cut()
    }
  }

  try {
    dispatcher.dispatch({ ...prepared.dispatch, headersTimeout: 0, bodyTimeout: clampMs(timeouts.totalMs) }, handler)
  } catch (error) {
    const failure = dispatchFailure(error, false)
    fail(failure.reason, failure.detail)
  }
  return () => {
    if (!settled) {
      settled = true
      stopTimer()
      abort("outbound request abandoned")
      finish({ bytes: 0, error: "abandoned" })
    }
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
