/**
 * Dispatches a prepared request and buffers its response under the connect, first-byte and total
 * deadlines and the body cap. Deadlines are wall-clock timers: they bound real socket I/O.
 */
import type { Dispatcher } from "undici"
import type { ExchangeCallbacks } from "./ExchangeCallbacks.ts"
import { OutboundConnectRefused } from "./GuardedConnector.ts"
import { addConnectionTokens, hopByHopHeaders } from "./HopByHop.ts"
import { OutboundError, type OutboundErrorReason } from "./OutboundError.ts"
import type { PreparedOutbound } from "./OutboundGuard.ts"

/** Per-request deadlines in milliseconds (the connector's `proxy.timeouts`). */
export interface OutboundTimeouts {
  /** From dispatch until a connection carries the request (pool wait, DNS, TCP, TLS). */
  readonly connectMs: number
  /** From the moment the request (its body included) has been sent until the response headers. */
  readonly firstByteMs: number
  /** From dispatch until the last body byte. */
  readonly totalMs: number
}

/** A complete upstream response; hop-by-hop headers removed, redirects returned as they are. */
export interface OutboundResponse {
  readonly status: number
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string>>>
  readonly body: Uint8Array
  readonly durationMs: number
}

const safeCode = (error: unknown): string | undefined => {
  const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined
  return typeof code === "string" && /^[A-Z0-9_]{1,48}$/.test(code) ? code : undefined
}

const timeoutCodes: ReadonlySet<string> = new Set([
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "ETIMEDOUT"
])

/** Maps a dispatch failure to a reason; `started` says whether a connection carried the request. */
export const dispatchFailure = (
  error: unknown,
  started: boolean
): { readonly reason: OutboundErrorReason; readonly detail: string } => {
  if (error instanceof OutboundConnectRefused) return { reason: error.reason, detail: error.message }
  const code = safeCode(error)
  const suffix = code === undefined ? "" : ` (${code})`
  if (code !== undefined && timeoutCodes.has(code))
    return { reason: "timeout", detail: `the upstream timed out${suffix}` }
  if (code === "UND_ERR_HEADERS_OVERFLOW")
    return { reason: "response_headers_too_large", detail: "the response headers exceed the configured limit" }
  if (code === "UND_ERR_INVALID_ARG")
    return { reason: "invalid_request", detail: "the request was rejected by the client" }
  if (!started) return { reason: "connect_failed", detail: `could not connect${suffix}` }
  return { reason: "protocol_error", detail: `the exchange failed${suffix}` }
}

/** A timer delay Node accepts: at least 1 ms, at most 2^31 − 1 ms; nonsense becomes 1 ms. */
export const clampMs = (ms: number): number =>
  Number.isFinite(ms) ? Math.min(Math.max(1, Math.floor(ms)), 2_147_483_647) : 1

/**
 * Response headers with lower-case names, hop-by-hop headers removed (`stripHopByHop`'s rules):
 * one walk over the upstream's headers (issue 31, allocation); only an answer whose `Connection`
 * lists header names has those removed after it.
 */
export const responseHeaders = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
): Record<string, string | ReadonlyArray<string>> => {
  const out: Record<string, string | ReadonlyArray<string>> = {}
  let listed: Set<string> | undefined
  for (const name in headers) {
    if (!Object.hasOwn(headers, name)) continue
    const value = headers[name]
    if (value === undefined) continue
    const lower = name.toLowerCase()
    if (lower === "connection" || lower === "proxy-connection") {
      listed ??= new Set()
      addConnectionTokens(listed, value)
    }
    if (!hopByHopHeaders.has(lower)) out[lower] = value
  }
  if (listed !== undefined) for (const name of listed) delete out[name]
  return out
}

const bodyless = (method: string, status: number): boolean =>
  method.toUpperCase() === "HEAD" || status === 204 || status === 304

/**
 * Sends `prepared` through `dispatcher` and buffers the response, in plain code (the proxy's fast
 * path): `callbacks.onAnswer` once the body is complete, or `callbacks.onFailure`. Answers a
 * function that abandons the exchange (the caller went away); it does nothing once reported.
 */
export const startCollect = (
  dispatcher: Dispatcher,
  prepared: PreparedOutbound,
  timeouts: OutboundTimeouts,
  maxResponseBytes: number,
  callbacks: ExchangeCallbacks<OutboundResponse>
): (() => void) => {
  // A nonsense cap (NaN, negative) fails closed: no body is accepted.
  const cap = Number.isFinite(maxResponseBytes) && maxResponseBytes > 0 ? Math.floor(maxResponseBytes) : 0
  const startedAt = performance.now()
  const timers = new Set<ReturnType<typeof setTimeout>>()
  let controller: Dispatcher.DispatchController | undefined
  let pendingAbort: Error | undefined
  let settled = false
  let started = false
  let status = 0
  let headers: Record<string, string | ReadonlyArray<string>> = {}
  const chunks: Array<Uint8Array> = []
  let received = 0

  const stopTimers = () => {
    for (const timer of timers) clearTimeout(timer)
    timers.clear()
  }
  const fail = (reason: OutboundErrorReason, detail: string) => {
    if (settled) return
    settled = true
    stopTimers()
    callbacks.onFailure(new OutboundError({ reason, target: prepared.target, detail }))
  }
  /** Stops the exchange: the socket is dropped, never reused. */
  const abort = () => {
    const reason = new Error("outbound request abandoned")
    if (controller === undefined) pendingAbort = reason
    else if (!controller.aborted) controller.abort(reason)
  }
  const giveUp = (reason: OutboundErrorReason, detail: string) => {
    fail(reason, detail)
    abort()
  }
  const deadline = (ms: number, detail: string) => {
    const timer = setTimeout(() => giveUp("timeout", detail), clampMs(ms))
    timers.add(timer)
    return timer
  }

  const connectTimer = deadline(timeouts.connectMs, `no connection within ${timeouts.connectMs} ms`)
  deadline(timeouts.totalMs, `no complete response within ${timeouts.totalMs} ms`)
  let firstByteTimer: ReturnType<typeof setTimeout> | undefined

  const handler: Dispatcher.DispatchHandler = {
    onRequestStart(c) {
      controller = c
      if (pendingAbort !== undefined || settled) {
        c.abort(pendingAbort ?? new Error("outbound request abandoned"))
        return
      }
      started = true
      clearTimeout(connectTimer)
      timers.delete(connectTimer)
    },
    onRequestSent() {
      // The first-byte deadline starts once the request body has been sent (issue 32 item 15).
      if (settled || status !== 0) return
      firstByteTimer = deadline(timeouts.firstByteMs, `no response headers within ${timeouts.firstByteMs} ms`)
    },
    onResponseStart(_c, statusCode, rawHeaders) {
      if (settled || statusCode < 200) return
      if (firstByteTimer !== undefined) {
        clearTimeout(firstByteTimer)
        timers.delete(firstByteTimer)
      }
      status = statusCode
      headers = responseHeaders(rawHeaders)
      const declared = Number(headers["content-length"])
      if (!bodyless(String(prepared.dispatch.method), statusCode) && declared > cap) {
        giveUp("response_too_large", `the response declares more than ${maxResponseBytes} bytes`)
      }
    },
    onResponseData(_c, chunk) {
      if (settled) return
      received += chunk.byteLength
      if (received > cap) {
        giveUp("response_too_large", `the response is larger than ${maxResponseBytes} bytes`)
        return
      }
      chunks.push(chunk)
    },
    onResponseEnd() {
      if (settled) return
      settled = true
      stopTimers()
      const body = concat(chunks, received)
      callbacks.onAnswer({ status, headers, body, durationMs: Math.round(performance.now() - startedAt) })
    },
    onResponseError(_c, error) {
      const { reason, detail } = dispatchFailure(error, started)
      fail(reason, detail)
    }
  }

  try {
    dispatcher.dispatch({ ...prepared.dispatch, headersTimeout: 0, bodyTimeout: 0 }, handler)
  } catch (error) {
    const { reason, detail } = dispatchFailure(error, false)
    fail(reason, detail)
  }
  return () => {
    if (settled) return
    settled = true
    stopTimers()
    abort()
  }
}

const concat = (chunks: ReadonlyArray<Uint8Array>, size: number): Uint8Array => {
  const body = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    body.set(chunk, offset)
    offset += chunk.byteLength
  }
  return body
}
