/**
 * The `_proxy` route (spec 4.2, API-CONVENTIONS "Proxy"): the request comes as a JSON envelope
 * with its body inline, the upstream answer is buffered (at most `maxEnvelopeResponseBytes`) and
 * returned as an envelope. The body is in memory, so a 401 can always be retried.
 */
import { type ProxyRequest, ProxyResponse } from "@svc/domain/Proxy"
import { Effect, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import type { InjectedRequest } from "../outbound/CredentialInjection.ts"
import type { Outbound, OutboundRequest, OutboundResponse } from "../outbound/Outbound.ts"
import { responseEnvelope } from "./ResponseEnvelope.ts"
import {
  badRequest,
  type CallerRequest,
  type FastRequest,
  type FastRoute,
  forwardable,
  type Route,
  writeComplete
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
  return { method: body.method, url: new URL(body.url), headers, labels: body.labels, replayable: true, payload }
}

/** The upstream request of an envelope with credentials in place. */
const upstreamRequest = (request: EnvelopeRequest, injected: InjectedRequest): OutboundRequest => ({
  method: request.method,
  url: injected.url,
  headers: injected.headers,
  ...(request.payload ? { body: request.payload } : {})
})

/** The `_proxy` route over `outbound`. */
export const envelopeRoute = (
  outbound: Outbound["Service"]
): Route<ProxyRequest, EnvelopeRequest, OutboundResponse, ProxyResponse | HttpServerResponse.HttpServerResponse> => ({
  span: "DataPlane.proxy",
  read: readEnvelope,
  send: (request, injected, options, captures) => {
    const sent = outbound.send(upstreamRequest(request, injected), {
      ...options,
      maxResponseBytes: maxEnvelopeResponseBytes
    })
    if (captures === undefined) return sent
    captures.request.push(request.payload ?? empty)
    return Effect.map(sent, (answer) => {
      captures.response.push(answer.body)
      return answer
    })
  },
  whenOver: (_answer, over) => over(undefined),
  discard: () => {},
  relay: (_request, answer) => Effect.succeed(responseEnvelope(answer)),
  // svc's own answer (a synthetic 429) is a real HTTP answer, not an envelope (API-CONVENTIONS
  // "Proxy"): a caller tells it from a genuine upstream 429, which arrives inside a 200 envelope.
  answer: (_request, answer) =>
    Effect.succeed(
      HttpServerResponse.uint8Array(answer.body, {
        status: answer.status,
        headers: answer.headers,
        contentType: answer.headers["content-type"]
      })
    )
})

/** An envelope the fast path took. */
export interface FastEnvelopeRequest extends EnvelopeRequest, FastRequest {}

const encodeEnvelope = Schema.encodeSync(ProxyResponse)
const jsonHeaders = () => ({ "content-type": "application/json" })

/**
 * The `_proxy` route in plain code, for the fast path (`FastExchange.ts`): the same envelope,
 * encoded as HttpApi encodes it, and svc's own answer as the same real HTTP answer.
 */
export const envelopeFastRoute = (outbound: Outbound["Service"]): FastRoute<FastEnvelopeRequest, OutboundResponse> => ({
  send: (request, injected, options, captures, callbacks) => {
    captures?.request.push(request.payload ?? empty)
    return outbound.sendPlain(
      upstreamRequest(request, injected),
      { ...options, maxResponseBytes: maxEnvelopeResponseBytes },
      {
        onAnswer: (answer) => {
          captures?.response.push(answer.body)
          callbacks.onAnswer(answer)
        },
        onFailure: callbacks.onFailure
      }
    )
  },
  whenOver: (_answer, over) => over(undefined),
  discard: () => {},
  relay: (request, answer) => {
    writeComplete(request.response, 200, jsonHeaders(), JSON.stringify(encodeEnvelope(responseEnvelope(answer))))
    return undefined
  },
  answer: (request, answer) => writeComplete(request.response, answer.status, { ...answer.headers }, answer.body)
})
