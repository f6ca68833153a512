/**
 * The `_proxy_raw` route (spec 4.2): the upstream URL and request labels come as `X-Svc-*`
 * headers, both bodies stream end to end and the answer is written on the Node response itself,
 * flushed as it arrives. A request with a body cannot be replayed, so only a bodiless 401 is
 * retried.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { Transform } from "node:stream"
import type { BadRequest } from "@svc/domain/Errors"
import { labelHeader, parseLabelHeaders, upstreamUrlHeader } from "@svc/domain/Proxy"
import { type Cause, Effect } from "effect"
import type { BodyCapture } from "../events/BodyCapture.ts"
import type { InjectedRequest } from "../outbound/CredentialInjection.ts"
import type { ChunkObserver, Outbound, OutboundRequest, StreamedResponse } from "../outbound/Outbound.ts"
import { logSafeTarget, OutboundError, outboundHttpError } from "../outbound/OutboundError.ts"
import {
  badRequest,
  type Captures,
  forwardable,
  type Leg,
  type NodeRequest,
  type ProxyError,
  type Reply,
  writeError,
  writeInternalError
} from "./Route.ts"
import type { SvcAnswer } from "./Stages.ts"

/** What the raw handler hands over: the Node request and the response to write on. */
export interface RawInput {
  readonly request: IncomingMessage
  readonly response: ServerResponse
}

/** A raw request: the body still unread on `incoming`. */
export interface RawRequest extends NodeRequest {
  readonly hasBody: boolean
  /** The declared body length, when it is one. */
  readonly contentLength: number | undefined
  /** The caller sent `TE: trailers`: the upstream is asked for trailers and they are relayed. */
  readonly trailers: boolean
}

const headerValues = (value: string | Array<string> | undefined): ReadonlyArray<string> =>
  value === undefined ? [] : Array.isArray(value) ? value : [value]

const parseUrl = (text: string | undefined, field: string): URL | BadRequest => {
  if (text === undefined || text === "") return badRequest(`${field} is required`, "invalid_request", field)
  try {
    const url = new URL(text)
    if (url.protocol === "http:" || url.protocol === "https:") return url
  } catch {}
  return badRequest(`${field} must be an absolute http or https URL`, "invalid_request", field)
}

/** `body` with each chunk also pushed to `capture` as the upstream reads it. */
const captured = (body: IncomingMessage, capture: BodyCapture) =>
  body.pipe(
    new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        capture.push(chunk)
        callback(null, chunk)
      }
    })
  )

/** `TE` lists `trailers` (RFC 9110 10.1.4). */
const asksForTrailers = (te: string | ReadonlyArray<string> | undefined): boolean => {
  if (te === undefined) return false
  for (const token of (typeof te === "string" ? te : te.join(",")).split(","))
    if (token.split(";")[0]?.trim().toLowerCase() === "trailers") return true
  return false
}

/** Reads a raw request (after the target resolved); a 400 when its `X-Svc-*` controls are not valid. */
export const readRaw = (input: RawInput): RawRequest | BadRequest => {
  const { request } = input
  const url = parseUrl(headerValues(request.headers[upstreamUrlHeader])[0], `header.${upstreamUrlHeader}`)
  if (!(url instanceof URL)) return url
  const labels = parseLabelHeaders(headerValues(request.headers[labelHeader]))
  if ("problems" in labels) {
    const first = labels.problems[0]
    return badRequest("a request label is not valid", "invalid_label", first?.field, first?.message)
  }
  const override = headerValues(request.headers["x-svc-upstream-method"])[0]
  const declared = request.headers["content-length"]
  const length = declared === undefined ? undefined : Number(declared)
  const hasBody = (length !== undefined && length > 0) || request.headers["transfer-encoding"] !== undefined
  return {
    method: override ?? request.method ?? "GET",
    url,
    headers: forwardable(request.headers, false),
    labels: labels.labels,
    replayable: !hasBody,
    bodySize: hasBody ? (length !== undefined && Number.isSafeInteger(length) ? length : undefined) : 0,
    incoming: request,
    response: input.response,
    hasBody,
    contentLength: hasBody && length !== undefined && Number.isSafeInteger(length) ? length : undefined,
    trailers: asksForTrailers(request.headers.te)
  }
}

const unrelayable = (request: RawRequest) =>
  outboundHttpError(
    new OutboundError({
      reason: "protocol_error",
      target: logSafeTarget(request.url),
      detail: "the upstream answered headers that cannot be relayed"
    })
  )

/**
 * The answer's headers framed for the caller's method (issue 32 item 12; docs/proxy.md): the
 * answer to an upstream `HEAD` has no body, whatever length it declares; a caller that did not
 * send `HEAD` itself (`X-Svc-Upstream-Method: HEAD`) would wait for that many bytes and read the
 * next answer on its connection as them. Its `Content-Length` is dropped, so the empty body is
 * framed as such (chunked, at once terminated). The headers as they are otherwise.
 */
const framed = (request: RawRequest, headers: StreamedResponse["headers"]): Record<string, string | Array<string>> => {
  const all = headers as Record<string, string | Array<string>>
  if (request.method !== "HEAD" || request.incoming.method === "HEAD" || all["content-length"] === undefined) return all
  const { "content-length": _declared, ...rest } = all
  return rest
}

/**
 * Writes the upstream's answer on the caller's response, plain: the head at once, each chunk of
 * the body as it arrives; `over` is called once the body is over (finished, or cut: then both sides are
 * closed and the event records what happened). Answers the error to give instead when the head
 * cannot be written (nothing was written, `over` is never called).
 */
export const relayRaw = (
  request: RawRequest,
  answer: StreamedResponse,
  over: () => void
): ReturnType<typeof unrelayable> | undefined => {
  const { response } = request
  try {
    response.writeHead(answer.status, framed(request, answer.headers))
    // A streamed answer (no length: chunked, server-sent events) shows its head at once; one
    // with a length goes out with its first bytes, headers and body in one write.
    if (answer.headers["content-length"] === undefined) response.flushHeaders()
  } catch {
    answer.body.destroy()
    return unrelayable(request)
  }
  const body = answer.body
  let done = false
  const finish = (failed: boolean) => {
    if (done) return
    done = true
    if (failed) {
      // The caller went away or the upstream broke mid-body: the socket is closed, the event
      // records what happened.
      body.destroy()
      if (!response.destroyed) response.destroy()
    }
    over()
  }
  response.once("close", () => finish(!response.writableFinished))
  response.once("finish", () => finish(false))
  body.pipe(response, () => finish(true), request.trailers)
  return undefined
}

/** The upstream request of a raw request with credentials in place; with `captures`, its body is recorded as it leaves. */
export const rawOutbound = (
  request: RawRequest,
  injected: InjectedRequest,
  captures: Captures | undefined
): OutboundRequest => {
  const body = request.hasBody
    ? captures === undefined
      ? request.incoming
      : captured(request.incoming, captures.request)
    : undefined
  return {
    method: request.method,
    url: injected.url,
    headers: injected.headers,
    ...(body === undefined ? {} : { body }),
    ...(request.contentLength === undefined ? {} : { contentLength: request.contentLength }),
    trailers: request.trailers
  }
}

/** With `captures`, the observer recording the response body as it arrives. */
export const responseObserver = (captures: Captures | undefined): ChunkObserver | undefined =>
  captures === undefined ? undefined : (chunk) => captures.response.push(chunk)

/** svc's own answer (a synthetic 429) on the caller's response. */
export const answerRaw = (request: RawRequest, answer: SvcAnswer): void => {
  request.response.writeHead(answer.status, answer.headers)
  request.response.end(answer.body)
}

const whenOver = (answer: StreamedResponse, over: (error: string | undefined) => void) => {
  void answer.done.then((outcome) => over(outcome.error))
}

const discard = (answer: StreamedResponse) => {
  answer.body.destroy()
}

/** The upstream leg of `_proxy_raw` over `outbound`: both bodies stream. */
export const rawLeg = (outbound: Outbound["Service"]): Leg<RawRequest, StreamedResponse> => ({
  send: (request, injected, options, captures, callbacks) =>
    outbound.streamPlain(
      rawOutbound(request, injected, captures),
      options,
      responseObserver(captures),
      callbacks,
      request.response
    ),
  whenOver,
  discard
})

const relayed = () => {}

/** The warm door's answers of a raw request: all written on its Node response; `broken` logs first. */
export const warmRawReply = (
  request: RawRequest,
  logDefect: (cause: Cause.Cause<unknown>) => void
): Reply<StreamedResponse> => ({
  error: (error) => writeError(request.response, error),
  svc: (answer) => answerRaw(request, answer),
  relay: (answer) => {
    const failed = relayRaw(request, answer, relayed)
    if (failed !== undefined) writeError(request.response, failed)
  },
  broken: (cause) => {
    logDefect(cause)
    writeInternalError(request.response)
  }
})

/**
 * The cold door's answers of a raw request: the upstream's and svc's own are written on the Node
 * response (the handler's fiber completes once the body is over); errors and defects go back to
 * the HttpApi handler, which encodes them.
 */
export const coldRawReply = (
  request: RawRequest,
  resume: (effect: Effect.Effect<void, ProxyError>) => void
): Reply<StreamedResponse> => ({
  error: (error) => resume(Effect.fail(error)),
  svc: (answer) => {
    answerRaw(request, answer)
    resume(Effect.void)
  },
  relay: (answer) => {
    const failed = relayRaw(request, answer, () => resume(Effect.void))
    if (failed !== undefined) resume(Effect.fail(failed))
  },
  broken: (cause) => resume(Effect.failCause(cause as Cause.Cause<never>))
})
