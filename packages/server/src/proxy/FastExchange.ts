/**
 * The fast path of `_proxy_raw` and `_proxy` (issue 16; docs/performance.md): the same stages as
 * the pipeline (`Pipeline.ts`), in the same order and with the same release discipline, run as
 * plain synchronous code and callbacks over state the slow path cached (the connection's target,
 * the caller's verified token). Each route is the plain-code twin of its HttpApi route
 * (`rawFastRoute`, `envelopeFastRoute`). Effect runs only at the boundaries that may wait or are
 * rare: the rate-limit check (synchronous on the embedded counters, one round trip on Redis), the
 * reactive limiter's look at an answer, and an OAuth2 refresh after a 401.
 *
 * It takes a request only when everything it needs is cached and the request's own controls
 * read cleanly (`tryRaw` and `tryEnvelope` answer false before they touched anything otherwise,
 * and the request takes the HttpApi route, which loads, checks and answers every error). Once
 * taken, every answer is what the HttpApi route would write: the upstream's answer (as it is, or
 * in its envelope), svc's own 429, or the standard error body with the error's status.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { BadRequest, ServiceUnavailable } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import type { ProxyRequest } from "@svc/domain/Proxy"
import type { RequestEventRateLimit } from "@svc/domain/RequestEvent"
import { Cause, type Context, Effect, Exit, Tracer } from "effect"
import { BodyCapture } from "../events/BodyCapture.ts"
import type { RecordedHeaders } from "../events/Recordings.ts"
import type { Outbound } from "../outbound/Outbound.ts"
import { type OutboundError, outboundHttpError, refusedBeforeLeaving } from "../outbound/OutboundError.ts"
import { inboundSpanOf } from "../telemetry/InboundSpans.ts"
import type { ConnectionGate, Release } from "./ConnectionGate.ts"
import { envelopeFastRoute, type FastEnvelopeRequest, readEnvelope } from "./EnvelopeRoute.ts"
import type { ExchangeStart, ProxyEvents } from "./ProxyEvents.ts"
import type { ProxyTarget, ProxyTargets } from "./ProxyTargets.ts"
import { rawFastRoute, readRaw } from "./RawRoute.ts"
import {
  type AnswerHead,
  type CallerRequest,
  type Captures,
  type FastRequest,
  type FastRoute,
  writeError,
  writeInternalError
} from "./Route.ts"
import type { Stages, SvcAnswer, Verdict } from "./Stages.ts"

/** What the fast path shares with the pipeline: the same services, gate and event writers. */
export interface FastExchangeDeps {
  readonly targets: ProxyTargets["Service"]
  readonly events: ProxyEvents["Service"]
  readonly outbound: Outbound["Service"]
  readonly stages: Stages
  readonly gate: ConnectionGate
  /** The services the boundary effects run with. */
  readonly context: Context.Context<never>
  readonly snapshotLabels: (
    target: ProxyTarget,
    actor: AuthenticatedActor,
    request: CallerRequest
  ) => Record<string, string> | BadRequest
  readonly requestLog: (
    target: ProxyTarget,
    actor: AuthenticatedActor,
    request: CallerRequest,
    labels: Record<string, string>
  ) => ExchangeStart
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

/** The fast `_proxy_raw` and `_proxy`. */
export const makeFastExchange = (deps: FastExchangeDeps) => {
  const { targets, events, outbound, stages, gate, context } = deps
  const cap = events.recordingCap
  const run = Effect.runForkWith(context)
  const raw = rawFastRoute(outbound)
  const envelope = envelopeFastRoute(outbound)

  /** Runs a boundary effect: its value now when it completes synchronously, else when it does. */
  const runNow = <A>(effect: Effect.Effect<A>, then: (exit: Exit.Exit<A>) => void): void => {
    const fiber = run(effect)
    const exit = fiber.pollUnsafe()
    if (exit !== undefined) then(exit)
    else fiber.addObserver(then)
  }

  /** Something that cannot fail did: the standard 500, logged as the HttpApi route would. */
  const broken = (response: ServerResponse, cause: Cause.Cause<unknown>) => {
    if (!Cause.hasInterruptsOnly(cause)) run(Effect.logError("unhandled failure while serving a request", cause))
    if (response.destroyed) return
    writeInternalError(response)
  }

  /** The caller's socket closed before svc answered (a request whose body was read whole is not gone). */
  const gone = (request: FastRequest) =>
    request.response.destroyed || (request.incoming.destroyed && !request.incoming.complete)

  const exchange = <R extends FastRequest, U extends AnswerHead>(
    route: FastRoute<R, U>,
    actor: AuthenticatedActor,
    target: ProxyTarget,
    request: R,
    retried: boolean
  ): void => {
    const labels = deps.snapshotLabels(target, actor, request)
    if (labels instanceof BadRequest) {
      writeError(request.response, labels)
      return
    }
    const start = deps.requestLog(target, actor, request, labels)
    // Telemetry: the limiter's counter-store call runs under the request's server span (if traced).
    const span = inboundSpanOf(request.incoming)
    const limit = stages.limit(start)
    runNow(span === undefined ? limit : Effect.provideService(limit, Tracer.ParentSpan, span), (exit) => {
      if (Exit.isFailure(exit)) return broken(request.response, exit.cause)
      limited(route, actor, target, request, retried, start, exit.value)
    })
  }

  const limited = <R extends FastRequest, U extends AnswerHead>(
    route: FastRoute<R, U>,
    actor: AuthenticatedActor,
    target: ProxyTarget,
    request: R,
    retried: boolean,
    start: ExchangeStart,
    verdict: Verdict
  ) => {
    const rateLimit = verdict.rateLimit
    if (gone(request)) return
    if (verdict._tag === "Answer") {
      deps.recordSvcAnswer(start, request, verdict.answer, rateLimit)
      route.answer(request, verdict.answer)
      return
    }
    const limit = target.definition.proxy.max_concurrent_requests
    const entered = gate.enter(target.row.id, limit, target.send.timeouts.connectMs)
    if (typeof entered === "function") {
      send(route, actor, target, request, retried, start, rateLimit, entered)
      return
    }
    void entered.then((release) => {
      // A caller that went away while queued hands its slot straight back.
      if (release !== undefined && gone(request)) release()
      else if (release !== undefined) send(route, actor, target, request, retried, start, rateLimit, release)
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

  const send = <R extends FastRequest, U extends AnswerHead>(
    route: FastRoute<R, U>,
    actor: AuthenticatedActor,
    target: ProxyTarget,
    request: R,
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
    let reported = false
    // The caller went away before the answer: the upstream exchange is abandoned, its slot given
    // back, and no event written (as when the HttpApi route's fiber is interrupted).
    const onClose = () => {
      if (reported) return
      reported = true
      abandon()
      release()
    }
    const abandon = route.send(request, injected, target.send, captures, {
      onFailure: (failure: OutboundError) => {
        if (reported) return
        reported = true
        response.off("close", onClose)
        release()
        // A request the guard refused never left: it is the caller's error, not an exchange.
        if (!refusedBeforeLeaving.has(failure.reason)) {
          deps.record(start, request, captures, rateLimit, undefined, undefined, failure.message)
        }
        writeError(response, outboundHttpError(failure))
      },
      onAnswer: (answer: U) => {
        if (reported) {
          route.discard(answer)
          return
        }
        reported = true
        response.off("close", onClose)
        answered(route, actor, target, request, retried, start, rateLimit, release, captures, answer)
      }
    })
    if (!reported) response.once("close", onClose)
  }

  const answered = <R extends FastRequest, U extends AnswerHead>(
    route: FastRoute<R, U>,
    actor: AuthenticatedActor,
    target: ProxyTarget,
    request: R,
    retried: boolean,
    start: ExchangeStart,
    rateLimit: RequestEventRateLimit | undefined,
    release: Release,
    captures: Captures | undefined,
    answer: U
  ) => {
    runNow(stages.answered(start, answer.status, answer.headers), () => {})
    let settled = false
    const settle = (error: string | undefined) => {
      if (settled) return
      settled = true
      release()
      deps.record(start, request, captures, rateLimit, answer.status, answer.headers as RecordedHeaders, error)
    }
    route.whenOver(answer, settle)
    if (answer.status === 401 && request.replayable && !retried && deps.refreshable(target)) {
      // An OAuth2 token the upstream refused: one refresh (single flight), one retry.
      runNow(targets.afterUnauthorized(target), (exit) => {
        const renewed = Exit.isSuccess(exit) ? exit.value : undefined
        if (renewed !== undefined && !gone(request)) {
          settle(undefined)
          route.discard(answer)
          exchange(route, actor, renewed, request, true)
        } else relay(route, request, answer)
      })
      return
    }
    relay(route, request, answer)
  }

  const relay = <R extends FastRequest, U extends AnswerHead>(route: FastRoute<R, U>, request: R, answer: U) => {
    let failed: ReturnType<typeof route.relay>
    try {
      failed = route.relay(request, answer)
    } catch (defect) {
      // Never expected (an answer that does not encode): the standard 500, logged.
      route.discard(answer)
      return broken(request.response, Cause.die(defect))
    }
    if (failed !== undefined) writeError(request.response, failed)
  }

  return {
    /**
     * Takes `_proxy` of connection `id` for `actor` with `payload` (already decoded) when its
     * target is cached and fresh and the envelope reads cleanly; false (nothing written) sends it
     * down the HttpApi route.
     */
    tryEnvelope: (actor: AuthenticatedActor, id: string, payload: ProxyRequest, response: ServerResponse): boolean => {
      const target = targets.peek(actor, id)
      if (target === undefined) return false
      let read: ReturnType<typeof readEnvelope>
      try {
        read = readEnvelope(payload)
      } catch {
        return false
      }
      if (read instanceof BadRequest) return false
      const request: FastEnvelopeRequest = { ...read, incoming: response.req, response }
      exchange(envelope, actor, target, request, false)
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
      exchange(raw, actor, target, request, false)
      return true
    }
  }
}
