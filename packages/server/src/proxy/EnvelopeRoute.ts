/**
 * The `_proxy` route (spec 4.2, API-CONVENTIONS "Proxy"): the request comes as a JSON envelope
 * with its body inline, the upstream answer is buffered (at most `maxEnvelopeResponseBytes`) and
 * returned as an envelope. The body is in memory, so a 401 can always be retried. svc's own answer
 * (a synthetic 429) is a real HTTP answer, not an envelope: a caller tells it from a genuine
 * upstream 429, which arrives inside a 200 envelope.
 */
import type { ServerResponse } from "node:http"
import { type ProxyRequest, ProxyResponse } from "@svc/domain/Proxy"
import { type Cause, Effect, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import type { Outbound, OutboundRequest, OutboundResponse } from "../outbound/Outbound.ts"
import { responseEnvelope } from "./ResponseEnvelope.ts"
import {
  badRequest,
  type CallerRequest,
  forwardable,
  type Leg,
  type ProxyError,
  type Reply,
  writeComplete,
  writeError,
  writeInternalError
} from "./Route.ts"

/** Largest upstream response `_proxy` buffers into its envelope. */
export const maxEnvelopeResponseBytes = 10 * 1024 * 1024

/** An envelope's request: its body decoded to bytes. */
export interface EnvelopeRequest extends CallerRequest {
  readonly payload: Uint8Array | undefined
}

const empty = new Uint8Array(0)

/** Reads an envelope; a 400 when its body fields exclude each other. */
export const readEnvelope = (body: ProxyRequest): EnvelopeRequest | ReturnType<typeof badRequest> => {
  if (body.bodyJson !== undefined && body.bodyRaw !== undefined) {
    return badRequest("bodyJson and bodyRaw exclude each other", "invalid_request", "body.bodyRaw")
  }
  const headers = forwardable(body.headers ?? {}, true)
  let payload: Uint8Array | undefined
  if (body.bodyJson !== undefined) {
    payload = Buffer.from(JSON.stringify(body.bodyJson))
    headers["content-type"] ??= "application/json"
  } else if (body.bodyRaw !== undefined) {
    payload = Buffer.from(body.bodyRaw, "base64")
  }
  return {
    method: body.method,
    url: new URL(body.url),
    headers,
    labels: body.labels,
    replayable: true,
    bodySize: payload?.byteLength ?? 0,
    payload
  }
}

/** The upstream request of an envelope with credentials in place. */
const upstreamRequest = (request: EnvelopeRequest, injected: { url: URL; headers: Record<string, string> }) =>
  ({
    method: request.method,
    url: injected.url,
    headers: injected.headers,
    ...(request.payload ? { body: request.payload } : {})
  }) satisfies OutboundRequest

/** The upstream leg of `_proxy` over `outbound`: the answer is buffered under the envelope's cap. */
export const envelopeLeg = (outbound: Outbound["Service"]): Leg<EnvelopeRequest, OutboundResponse> => ({
  send: (request, injected, options, captures, callbacks) => {
    if (captures === undefined) {
      return outbound.sendPlain(
        upstreamRequest(request, injected),
        { ...options, maxResponseBytes: maxEnvelopeResponseBytes },
        callbacks
      )
    }
    captures.request.push(request.payload ?? empty)
    return outbound.sendPlain(
      upstreamRequest(request, injected),
      { ...options, maxResponseBytes: maxEnvelopeResponseBytes },
      {
        onAnswer: (answer) => {
          captures.response.push(answer.body)
          callbacks.onAnswer(answer)
        },
        onFailure: (error) => callbacks.onFailure(error)
      }
    )
  },
  whenOver: (_answer, over) => over(undefined),
  discard: () => {}
})

const encodeEnvelope = Schema.encodeSync(ProxyResponse)

/**
 * The warm door's answers of an envelope, written on `response` as HttpApi writes the route's:
 * the envelope encoded with the route's own schema, svc's own answer as the real HTTP answer.
 */
export const warmEnvelopeReply = (
  response: ServerResponse,
  logDefect: (cause: Cause.Cause<unknown>) => void
): Reply<OutboundResponse> => ({
  error: (error) => writeError(response, error),
  svc: (answer) => writeComplete(response, answer.status, { ...answer.headers }, answer.body),
  relay: (answer) =>
    writeComplete(
      response,
      200,
      { "content-type": "application/json" },
      JSON.stringify(encodeEnvelope(responseEnvelope(answer)))
    ),
  broken: (cause) => {
    logDefect(cause)
    writeInternalError(response)
  }
})

/** What the cold door's handler returns: the envelope, or svc's own answer as the HTTP response. */
export type EnvelopeAnswer = ProxyResponse | HttpServerResponse.HttpServerResponse

/** The cold door's answers of an envelope: handed back to the HttpApi handler, which encodes them. */
export const coldEnvelopeReply = (
  resume: (effect: Effect.Effect<EnvelopeAnswer, ProxyError>) => void
): Reply<OutboundResponse> => ({
  error: (error) => resume(Effect.fail(error)),
  svc: (answer) =>
    resume(
      Effect.succeed(
        HttpServerResponse.uint8Array(answer.body, {
          status: answer.status,
          headers: answer.headers,
          contentType: answer.headers["content-type"]
        })
      )
    ),
  relay: (answer) => resume(Effect.succeed(responseEnvelope(answer))),
  broken: (cause) => resume(Effect.failCause(cause as Cause.Cause<never>))
})
