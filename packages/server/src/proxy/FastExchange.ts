/**
 * The fast path of `_proxy_raw` (issue 16; docs/performance.md): the same stages as the pipeline
 * (`Pipeline.ts`), in the same order and with the same release discipline, run as plain
 * synchronous code and callbacks over state the slow path cached (the connection's target, the
 * caller's verified token). Effect runs only at the boundaries that may wait or are rare: the
 * rate-limit check (synchronous on the embedded counters, one round trip on Redis), the reactive
 * limiter's look at an answer, and an OAuth2 refresh after a 401.
 *
 * It takes a request only when everything it needs is cached and the request's own controls
 * read cleanly (`tryRaw` answers false before it touched anything otherwise, and the request
 * takes the HttpApi route, which loads, checks and answers every error). Once taken, every
 * answer is what the HttpApi route would write: the upstream's answer as it is, svc's own 429,
 * or the standard error body with the error's status.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { BadRequest, errorBody, ServiceUnavailable } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import type { RequestEventRateLimit } from "@svc/domain/RequestEvent"
import { type ProxyRequest, ProxyResponse } from "@svc/domain/Proxy"
import { Cause, type Context, Effect, Exit, Schema, Tracer } from "effect"
import { HttpServerResponse } from "effect/http"
import { BodyCapture } from "../events/BodyCapture.ts"
import { inboundSpanOf } from "../telemetry/InboundSpans.ts"
import type { RecordedHeaders } from "../events/Recordings.ts"
import type { Outbound, StreamedResponse } from "../outbound/Outbound.ts"
import { type OutboundError, outboundHttpError, refusedBeforeLeaving } from "../outbound/OutboundError.ts"
import type { ConnectionGate, Release } from "./ConnectionGate.ts"
import type { ExchangeStart, ProxyEvents } from "./ProxyEvents.ts"
import type { ProxyTarget, ProxyTargets } from "./ProxyTargets.ts"
import { answerRaw, type RawRequest, rawOutbound, readRaw, relayRaw, responseObserver } from "./RawRoute.ts"
import type { CallerRequest, Captures, ProxyError } from "./Route.ts"
import type { Stages, SvcAnswer, Verdict } from "./Stages.ts"

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

/** Writes `error` as HttpApi encodes it: the standard body `{error, code, details?}` with its status. */
export const writeError = (response: ServerResponse, error: ProxyError): void => {
  if (response.headersSent || response.destroyed) {
    if (!response.destroyed) response.destroy()
    return
  }
  const body = JSON.stringify(errorBody(error))
  response.writeHead(statusOf[error._tag] ?? 500, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body)
  })
  response.end(body)
}

const encodeResponse = Schema.encodeExit(ProxyResponse)

/** What the fast path shares with the pipeline: the same services, gate and event writers. */
export interface FastExchangeDeps {
  readonly targets: ProxyTargets["Service"]
  readonly events: ProxyEvents["Service"]
  readonly outbound: Outbound["Service"]
  readonly stages: Stages
  readonly gate: ConnectionGate
  /** The services the boundary effects run with. */
  readonly context: Context.Context<never>
  readonly requestLog: (target: ProxyTarget, actor: AuthenticatedActor, request: CallerRequest) => ExchangeStart
  readonly inject: (
    target: ProxyTarget,
    request: CallerRequest
  ) => ReturnType<typeof import("../outbound/CredentialInjection.ts").injectCredentials> | ServiceUnavailable
  readonly record: (
    start: ExchangeStart,
    request: CallerRequest,
    captures: Captures | undefined,
    rateLimit: RequestEventRateLimit | undefined,
    status: number | undefined,
    headers: RecordedHeaders | undefined,
    error: string | undefined
  ) => void
  readonly recordSvcAnswer: (
    start: ExchangeStart,
    request: CallerRequest,
    answer: SvcAnswer,
    rateLimit: RequestEventRateLimit | undefined
  ) => void
  readonly refreshable: (target: ProxyTarget) => boolean
}

/** The fast `_proxy_raw`. */
export const makeFastExchange = (deps: FastExchangeDeps) => {
  const { targets, events, outbound, stages, gate, context } = deps
  const cap = events.recordingCap
  const run = Effect.runForkWith(context)

  /** Runs a boundary effect: its value now when it completes synchronously, else when it does. */
  const runNow = <A>(effect: Effect.Effect<A>, then: (exit: Exit.Exit<A>) => void): void => {
    const fiber = run(effect)
    const exit = fiber.pollUnsafe()
    if (exit !== undefined) then(exit)
    else fiber.addObserver(then)
  }

  /** A boundary effect that never fails died or was interrupted: the standard 500, logged as the HttpApi route would. */
  const broken = (request: RawRequest, cause: Cause.Cause<unknown>) => {
    if (!Cause.hasInterruptsOnly(cause)) run(Effect.logError("unhandled failure while serving a request", cause))
    const response = request.response
    if (response.headersSent || response.destroyed) {
      if (!response.destroyed) response.destroy()
      return
    }
    writeInternalError(response)
  }

  const writeInternalError = (response: ServerResponse) => {
    if (response.headersSent) {
      response.destroy()
      return
    }
    const body = JSON.stringify({ error: "internal error", code: "internal_error" })
    response.writeHead(500, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    response.end(body)
  }

  /** The caller's socket closed before svc answered. */
  const gone = (request: RawRequest) => request.response.destroyed || request.incoming.destroyed

  const exchange = (actor: AuthenticatedActor, target: ProxyTarget, request: RawRequest, retried: boolean): void => {
    const start = deps.requestLog(target, actor, request)
    // Telemetry: the limiter's counter-store call runs under the request's server span (if traced).
    const span = inboundSpanOf(request.incoming)
    const limit = stages.limit(start)
    runNow(span === undefined ? limit : Effect.provideService(limit, Tracer.ParentSpan, span), (exit) => {
      if (Exit.isFailure(exit)) return broken(request, exit.cause)
      limited(actor, target, request, retried, start, exit.value)
    })
  }

  const limited = (
    actor: AuthenticatedActor,
    target: ProxyTarget,
    request: RawRequest,
    retried: boolean,
    start: ExchangeStart,
    verdict: Verdict
  ) => {
    const rateLimit = verdict.rateLimit
    if (gone(request)) return
    if (verdict._tag === "Answer") {
      deps.recordSvcAnswer(start, request, verdict.answer, rateLimit)
      answerRaw(request, verdict.answer)
      return
    }
    const limit = target.definition.proxy.max_concurrent_requests
    const entered = gate.enter(target.row.id, limit, target.send.timeouts.connectMs)
    if (typeof entered === "function") {
      send(actor, target, request, retried, start, rateLimit, entered)
      return
    }
    void entered.then((release) => {
      // A caller that went away while queued hands its slot straight back.
      if (release !== undefined && gone(request)) release()
      else if (release !== undefined) send(actor, target, request, retried, start, rateLimit, release)
      else
        writeError(
          request.response,
          new ServiceUnavailable({
            error: `connection ${target.row.id} has ${limit} requests in flight; retry later`,
            code: "connection_concurrency_exceeded"
          })
        )
    })
  }

  const send = (
    actor: AuthenticatedActor,
    target: ProxyTarget,
    request: RawRequest,
    retried: boolean,
    start: ExchangeStart,
    rateLimit: RequestEventRateLimit | undefined,
    release: Release
  ) => {
    const injected = deps.inject(target, request)
    if (injected instanceof ServiceUnavailable) {
      release()
      writeError(request.response, injected)
      return
    }
    const captures: Captures | undefined = events.recording
      ? { request: new BodyCapture(cap), response: new BodyCapture(cap) }
      : undefined
    const response = request.response
    let headed = false
    // The caller went away before the head: the upstream exchange is abandoned, its slot given
    // back, and no event written (as when the HttpApi route's fiber is interrupted).
    const onClose = () => {
      if (headed) return
      headed = true
      abandon()
      release()
    }
    const abandon = outbound.streamPlain(
      rawOutbound(request, injected, captures),
      target.send,
      responseObserver(captures),
      {
        onFailure: (failure: OutboundError) => {
          if (headed) return
          headed = true
          response.off("close", onClose)
          release()
          // A request the guard refused never left: it is the caller's error, not an exchange.
          if (!refusedBeforeLeaving.has(failure.reason)) {
            deps.record(start, request, captures, rateLimit, undefined, undefined, failure.message)
          }
          writeError(response, outboundHttpError(failure))
        },
        onHead: (answer: StreamedResponse) => {
          if (headed) {
            answer.body.destroy()
            return
          }
          headed = true
          response.off("close", onClose)
          answered(actor, target, request, retried, start, rateLimit, release, captures, answer)
        }
      }
    )
    if (!headed) response.once("close", onClose)
  }

  const answered = (
    actor: AuthenticatedActor,
    target: ProxyTarget,
    request: RawRequest,
    retried: boolean,
    start: ExchangeStart,
    rateLimit: RequestEventRateLimit | undefined,
    release: Release,
    captures: Captures | undefined,
    answer: StreamedResponse
  ) => {
    runNow(stages.answered(start, answer.status, answer.headers), () => {})
    let settled = false
    const settle = (error: string | undefined) => {
      if (settled) return
      settled = true
      release()
      deps.record(start, request, captures, rateLimit, answer.status, answer.headers as RecordedHeaders, error)
    }
    void answer.done.then((outcome) => settle(outcome.error))
    if (answer.status === 401 && request.replayable && !retried && deps.refreshable(target)) {
      // An OAuth2 token the upstream refused: one refresh (single flight), one retry.
      runNow(targets.afterUnauthorized(target), (exit) => {
        const renewed = Exit.isSuccess(exit) ? exit.value : undefined
        if (renewed !== undefined && !gone(request)) {
          settle(undefined)
          answer.body.destroy()
          exchange(actor, renewed, request, true)
        } else relay(request, answer)
      })
      return
    }
    relay(request, answer)
  }

  const relay = (request: RawRequest, answer: StreamedResponse) => {
    const failed = relayRaw(request, answer, () => {})
    if (failed !== undefined) writeError(request.response, failed)
  }

  /** Writes what the envelope handler answered: the envelope (as HttpApi encodes it), svc's own 429, or the error. */
  const writeEnvelope = (
    response: ServerResponse,
    exit: Exit.Exit<ProxyResponse | HttpServerResponse.HttpServerResponse, ProxyError>
  ) => {
    if (response.destroyed) return
    if (Exit.isFailure(exit)) {
      const failure = exit.cause.reasons.find(Cause.isFailReason)
      if (failure !== undefined) return writeError(response, failure.error)
      if (Cause.hasInterruptsOnly(exit.cause)) return
      run(Effect.logError("unhandled failure while serving a request", exit.cause))
      return writeInternalError(response)
    }
    const value = exit.value
    if (HttpServerResponse.isHttpServerResponse(value)) {
      const body = value.body
      const bytes = body._tag === "Uint8Array" ? body.body : new Uint8Array(0)
      const headers: Record<string, string> = { ...value.headers }
      if (body._tag === "Uint8Array") headers["content-type"] = body.contentType
      headers["content-length"] = String(bytes.byteLength)
      response.writeHead(value.status, headers)
      response.end(bytes)
      return
    }
    const encoded = encodeResponse(value)
    if (encoded._tag === "Failure") {
      run(Effect.logError("unhandled failure while serving a request", encoded.cause))
      return writeInternalError(response)
    }
    const text = JSON.stringify(encoded.value)
    response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
    response.end(text)
  }

  return {
    /**
     * Answers `_proxy` of connection `id` for `actor` with `payload` (already decoded) when its
     * target is cached and fresh; false (nothing written) sends it down the HttpApi route.
     */
    tryEnvelope: (
      actor: AuthenticatedActor,
      id: string,
      payload: ProxyRequest,
      response: ServerResponse,
      handler: (
        actor: AuthenticatedActor,
        id: string,
        payload: ProxyRequest
      ) => Effect.Effect<ProxyResponse | HttpServerResponse.HttpServerResponse, ProxyError>
    ): boolean => {
      if (targets.peek(actor, id) === undefined) return false
      // Telemetry: the handler runs under the request's server span (none when telemetry is off).
      const span = inboundSpanOf(response.req)
      const effect = handler(actor, id, payload)
      const fiber = run(span === undefined ? effect : Effect.provideService(effect, Tracer.ParentSpan, span))
      const done = fiber.pollUnsafe()
      if (done !== undefined) writeEnvelope(response, done)
      else {
        // The caller went away: the handler is interrupted, as the HttpApi route's fiber would be.
        const onClose = () => {
          if (!response.writableEnded) fiber.interruptUnsafe()
        }
        response.once("close", onClose)
        fiber.addObserver((exit) => {
          response.off("close", onClose)
          writeEnvelope(response, exit)
        })
      }
      return true
    },
    /**
     * Takes `_proxy_raw` of connection `id` for `actor` when its target is cached and fresh and
     * its controls read cleanly; false (nothing touched) sends it down the HttpApi route.
     */
    tryRaw: (actor: AuthenticatedActor, id: string, incoming: IncomingMessage, response: ServerResponse): boolean => {
      const target = targets.peek(actor, id)
      if (target === undefined) return false
      const request = readRaw({ request: incoming, response })
      if (request instanceof BadRequest) return false
      exchange(actor, target, request, false)
      return true
    }
  }
}
