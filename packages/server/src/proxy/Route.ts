/**
 * What `_proxy` and `_proxy_raw` do not share (spec 4.2): how a route reads the caller's request,
 * how its leg travels upstream and how an answer reaches the caller. Everything in between runs in
 * the one exchange (`Exchange.ts`); a route only moves bytes, it never decides.
 *
 * The answer of the warm door is written here on the Node response: the standard error body with
 * the status of the error's class (`httpStatusOf`, the table HttpApi answers the cold door with).
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { BadRequest, errorBody, httpStatusOf, internalErrorBody, type ServiceUnavailable } from "@svc/domain/Errors"
import type { Labels } from "@svc/domain/Labels"
import type { Cause } from "effect"
import type { BodyCapture } from "../events/BodyCapture.ts"
import type { InjectedRequest } from "../outbound/CredentialInjection.ts"
import type { ExchangeCallbacks, SendOptions } from "../outbound/Outbound.ts"
import type { outboundHttpError } from "../outbound/OutboundError.ts"
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
  /** The body's size in bytes when known before it is sent (a declared length, an envelope's body). */
  readonly bodySize: number | undefined
  /**
   * Who sent it on the caller's behalf: `mcp` for an agent's `call_connection` (docs/agents.md),
   * frozen into the snapshot as `svc/agent/-/via`; absent for `_proxy` and `_proxy_raw`.
   */
  readonly via?: "mcp" | undefined
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

/** How a route's request travels upstream (`R` the request it read, `U` the answer its transport yields). */
export interface Leg<R extends CallerRequest, U extends AnswerHead> {
  /**
   * Sends the request with credentials in place; with `captures`, the request body's bytes are
   * pushed as they leave and the response body's as they arrive. Reports to `callbacks`; answers
   * a function that abandons the exchange before it reported.
   */
  readonly send: (
    request: R,
    injected: InjectedRequest,
    options: SendOptions,
    captures: Captures | undefined,
    callbacks: ExchangeCallbacks<U>
  ) => () => void
  /** Calls `over` once the answer's body is over (at once when buffered), with why it did not complete. */
  readonly whenOver: (answer: U, over: (error: string | undefined) => void) => void
  /** Drops an answer that is not relayed (a 401 about to be retried). */
  readonly discard: (answer: U) => void
}

/**
 * Where the exchange's outcome goes: the door's writer. The exchange calls exactly one of these,
 * once (none when the caller went away first).
 */
export interface Reply<U extends AnswerHead> {
  /** svc refused or could not carry the request (nothing of an answer was written). */
  readonly error: (error: ProxyError) => void
  /** svc's own answer (a stage answered without calling the upstream). */
  readonly svc: (answer: SvcAnswer) => void
  /** The upstream's answer, to write to the caller (it may still fail with an error of its own). */
  readonly relay: (answer: U) => void
  /** Something that cannot fail did: the standard 500. */
  readonly broken: (cause: Cause.Cause<unknown>) => void
}

/** A request that came with its Node request and the response to write on. */
export interface NodeRequest extends CallerRequest {
  readonly incoming: IncomingMessage
  readonly response: ServerResponse
}

/** Writes `body` as a complete answer with an explicit length. */
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

/** Writes `error` as HttpApi encodes it: the standard body `{error, code, details?}` with its class's status. */
export const writeError = (response: ServerResponse, error: ProxyError): void => {
  if (response.headersSent || response.destroyed) {
    if (!response.destroyed) response.destroy()
    return
  }
  writeComplete(response, httpStatusOf(error), { "content-type": "application/json" }, JSON.stringify(errorBody(error)))
}

/** Writes the standard 500 (the socket is closed when an answer had begun). */
export const writeInternalError = (response: ServerResponse): void => {
  if (response.headersSent || response.destroyed) {
    if (!response.destroyed) response.destroy()
    return
  }
  writeComplete(response, 500, { "content-type": "application/json" }, JSON.stringify(internalErrorBody))
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
  for (const name in headers) {
    const value = headers[name]
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
