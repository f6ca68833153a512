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
import { Effect } from "effect"
import type { BodyCapture } from "../events/BodyCapture.ts"
import type { Outbound, StreamedResponse } from "../outbound/Outbound.ts"
import { logSafeTarget, OutboundError, outboundHttpError } from "../outbound/OutboundError.ts"
import { badRequest, type CallerRequest, forwardable, type Route } from "./Route.ts"

/** What the raw handler hands over: the Node request and the response to write on. */
export interface RawInput {
  readonly request: IncomingMessage
  readonly response: ServerResponse
}

/** A raw request: the body still unread on `incoming`. */
export interface RawRequest extends CallerRequest {
  readonly incoming: IncomingMessage
  readonly response: ServerResponse
  readonly hasBody: boolean
  /** The declared body length, when it is one. */
  readonly contentLength: number | undefined
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

const read = (input: RawInput): RawRequest | BadRequest => {
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
    method: (override ?? request.method ?? "GET").toUpperCase(),
    url,
    headers: forwardable(request.headers, false),
    labels: labels.labels,
    replayable: !hasBody,
    incoming: request,
    response: input.response,
    hasBody,
    contentLength: hasBody && length !== undefined && Number.isSafeInteger(length) ? length : undefined
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

/** The `_proxy_raw` route over `outbound`. */
export const rawRoute = (outbound: Outbound["Service"]): Route<RawInput, RawRequest, StreamedResponse, void> => ({
  span: "DataPlane.proxyRaw",
  read,
  send: (request, injected, options, captures) => {
    const body = request.hasBody
      ? captures === undefined
        ? request.incoming
        : captured(request.incoming, captures.request)
      : undefined
    return outbound.stream(
      {
        method: request.method,
        url: injected.url,
        headers: injected.headers,
        ...(body === undefined ? {} : { body }),
        ...(request.contentLength === undefined ? {} : { contentLength: request.contentLength })
      },
      options,
      captures === undefined ? undefined : (chunk) => captures.response.push(chunk)
    )
  },
  whenOver: (answer, over) => {
    void answer.done.then((outcome) => over(outcome.error))
  },
  discard: (answer) => {
    answer.body.destroy()
  },
  relay: (request, answer) => {
    const { response } = request
    try {
      response.writeHead(answer.status, answer.headers as Record<string, string | Array<string>>)
      // A streamed answer (no length: chunked, server-sent events) shows its head at once; one
      // with a length goes out with its first bytes, headers and body in one write.
      if (answer.headers["content-length"] === undefined) response.flushHeaders()
    } catch {
      answer.body.destroy()
      return Effect.fail(unrelayable(request))
    }
    // `pipe` rather than `stream.pipeline`: the latter allocates an AbortController and aborts it
    // (a DOMException with a stack trace) on every finish, a measurable cost per request.
    return Effect.callback<void>((resume) => {
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
        resume(Effect.void)
      }
      body.once("error", () => finish(true))
      response.once("close", () => finish(!response.writableFinished))
      response.once("finish", () => finish(false))
      body.pipe(response)
    })
  },
  answer: (request, answer) =>
    Effect.sync(() => {
      request.response.writeHead(answer.status, answer.headers)
      request.response.end(answer.body)
    })
})
