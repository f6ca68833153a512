/**
 * What `_proxy` and `_proxy_raw` do not share (spec 4.2): how a route reads the caller's request
 * and how it writes the answer. Everything between the two runs in the one pipeline
 * (`Pipeline.ts`); a route only moves bytes, it never decides.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { BadRequest, errorBody, type ServiceUnavailable } from "@svc/domain/Errors"
import type { Labels } from "@svc/domain/Labels"
import type { Effect } from "effect"
import type { BodyCapture } from "../events/BodyCapture.ts"
import type { InjectedRequest } from "../outbound/CredentialInjection.ts"
import type { ExchangeCallbacks, SendOptions } from "../outbound/Outbound.ts"
import type { OutboundError, outboundHttpError } from "../outbound/OutboundError.ts"
import type { TargetError } from "./ProxyTargets.ts"
import type { SvcAnswer } from "./Stages.ts"

/** Errors a proxied request answers with before any upstream byte reached the caller. */
export type ProxyError = TargetError | BadRequest | ServiceUnavailable | ReturnType<typeof outboundHttpError>

/** The caller's request as a route read it, before any stage. */
export interface CallerRequest {
  readonly method: string
  readonly url: URL
  /** The headers that may travel upstream, before credential injection (what a recording shows). */
  readonly headers: Record<string, string>
  /** The caller's request labels (spec 2.5 item 3). */
  readonly labels: Labels | undefined
  /** The body can be sent again: a 401 may be retried once after a token refresh. */
  readonly replayable: boolean
}

/** The head of an upstream answer, whatever the transport. */
export interface AnswerHead {
  readonly status: number
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string>>>
}

/** The bodies of one exchange as they pass, kept only when recording. */
export interface Captures {
  readonly request: BodyCapture
  readonly response: BodyCapture
}

/**
 * One route of the data plane: `In` is what the handler hands over, `R` the request it reads,
 * `U` the upstream answer its transport yields and `A` what the handler returns.
 */
export interface Route<In, R extends CallerRequest, U extends AnswerHead, A> {
  /** The span of one request. */
  readonly span: string
  /** Reads the caller's request (after the target resolved: an unknown connection is 404 first). */
  readonly read: (input: In) => R | BadRequest
  /**
   * Sends the request with credentials in place; with `captures`, the request body's bytes are
   * pushed as they leave and the response body's as they arrive.
   */
  readonly send: (
    request: R,
    injected: InjectedRequest,
    options: SendOptions,
    captures: Captures | undefined
  ) => Effect.Effect<U, OutboundError>
  /** Calls `over` once the answer's body is over (at once when buffered), with why it did not complete. */
  readonly whenOver: (answer: U, over: (error: string | undefined) => void) => void
  /** Drops an answer that is not relayed (a 401 about to be retried). */
  readonly discard: (answer: U) => void
  /** Writes the upstream's answer to the caller. */
  readonly relay: (request: R, answer: U) => Effect.Effect<A, ProxyError>
  /** Writes svc's own answer to the caller (a stage answered without calling the upstream). */
  readonly answer: (request: R, answer: SvcAnswer) => Effect.Effect<A, ProxyError>
}

/** A request the fast path took (`FastExchange.ts`): the Node request it came on and the response to write. */
export interface FastRequest extends CallerRequest {
  readonly incoming: IncomingMessage
  readonly response: ServerResponse
}

/**
 * A `Route` in plain code, for the fast path (`FastExchange.ts`): the same reading of the answer
 * and the same bytes written, with callbacks instead of effects.
 */
export interface FastRoute<R extends FastRequest, U extends AnswerHead> {
  /** Sends the request with credentials in place; answers a function that abandons the exchange before it reported. */
  readonly send: (
    request: R,
    injected: InjectedRequest,
    options: SendOptions,
    captures: Captures | undefined,
    callbacks: ExchangeCallbacks<U>
  ) => () => void
  readonly whenOver: (answer: U, over: (error: string | undefined) => void) => void
  readonly discard: (answer: U) => void
  /** Writes the upstream's answer to the caller; the error to write instead when it cannot (nothing written). */
  readonly relay: (request: R, answer: U) => ProxyError | undefined
  /** Writes svc's own answer to the caller. */
  readonly answer: (request: R, answer: SvcAnswer) => void
}

/** The HTTP status of each error a proxied request may answer (their `httpApiStatus`). */
const statusOf: Record<string, number> = {
  BadRequest: 400,
  Forbidden: 403,
  NotFound: 404,
  Conflict: 409,
  BadGateway: 502,
  ServiceUnavailable: 503,
  GatewayTimeout: 504
}

/** Writes `text` as a complete answer with an explicit length. */
export const writeComplete = (
  response: ServerResponse,
  status: number,
  headers: Record<string, string | ReadonlyArray<string>>,
  body: string | Uint8Array
): void => {
  headers["content-length"] = String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength)
  response.writeHead(status, headers as Record<string, string | Array<string>>)
  response.end(body)
}

/** Writes `error` as HttpApi encodes it: the standard body `{error, code, details?}` with its status. */
export const writeError = (response: ServerResponse, error: ProxyError): void => {
  if (response.headersSent || response.destroyed) {
    if (!response.destroyed) response.destroy()
    return
  }
  writeComplete(
    response,
    statusOf[error._tag] ?? 500,
    { "content-type": "application/json" },
    JSON.stringify(errorBody(error))
  )
}

/** Writes the standard 500 (the socket is closed when an answer had begun). */
export const writeInternalError = (response: ServerResponse): void => {
  if (response.headersSent) {
    response.destroy()
    return
  }
  writeComplete(
    response,
    500,
    { "content-type": "application/json" },
    JSON.stringify({ error: "internal error", code: "internal_error" })
  )
}

/** Headers of the caller's leg to svc that never describe the upstream request. */
const callerOnly: ReadonlySet<string> = new Set(["host", "content-length", "authorization"])

/**
 * The caller's headers as they may travel upstream, lower-cased, before credential injection
 * (what a recording shows): without svc's own `X-Svc-*` controls; `Cookie` only when the caller
 * addressed it to the upstream (the `_proxy` envelope), never a raw request's own cookies.
 */
export const forwardable = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  keepCookie: boolean
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase()
    if (value === undefined || callerOnly.has(lower) || lower.startsWith("x-svc-")) continue
    if (lower === "cookie" && !keepCookie) continue
    out[lower] = typeof value === "string" ? value : value.join(", ")
  }
  return out
}

/** A 400 naming the offending field. */
export const badRequest = (error: string, code: string, field?: string, message?: string): BadRequest =>
  new BadRequest({
    error,
    code,
    ...(field === undefined ? {} : { details: [{ field, message: message ?? error }] })
  })
