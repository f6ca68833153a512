/**
 * The one data-plane pipeline of `_proxy` and `_proxy_raw` (spec 4.2, 4.6 rule 5; ARCHITECTURE
 * "request path"), one function per stage, in chain order:
 *
 *   resolve target → label snapshot → request log → rate limit + reactive cool-down (one
 *   counter-store round trip) → concurrency gate → credential injection → send → reactive
 *   limiter sees the answer → record
 *
 * A route (`Route.ts`) only reads the caller's request and writes the answer. The limit stage
 * may answer itself (`Stages.ts`): the upstream is not called and the event says who answered.
 *
 * Release discipline, the same for both routes: a slot of the gate, once taken, is given back
 * exactly once (the release is idempotent). Without an answer (credentials unusable, the send
 * failed, the caller went away) at once; with an answer by `settle`, together with its event,
 * when the answer's body is over (at once when buffered, at the end of the stream otherwise).
 * A 401 retried after a token refresh settles its first exchange and runs the chain again from
 * the label snapshot (a second event).
 */
import { BadRequest, ServiceUnavailable } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { LabelConflict, labelSnapshot } from "@svc/domain/Proxy"
import type { RequestEventRateLimit } from "@svc/domain/RequestEvent"
import { Effect } from "effect"
import { BodyCapture, captureBuffered, captureSkipped, SkipReason } from "../events/BodyCapture.ts"
import type { RecordedHeaders } from "../events/Recordings.ts"
import { CredentialInjectionError, type InjectedRequest, injectCredentials } from "../outbound/CredentialInjection.ts"
import { outboundHttpError, refusedBeforeLeaving } from "../outbound/OutboundError.ts"
import type { Outbound } from "../outbound/Outbound.ts"
import { Telemetry } from "../telemetry/Telemetry.ts"
import { ConnectionGate, type Release } from "./ConnectionGate.ts"
import { outboundTelemetry } from "./OutboundTelemetry.ts"
import { makeFastExchange } from "./FastExchange.ts"
import { type ExchangeStart, ProxyEvents } from "./ProxyEvents.ts"
import { ProxyTargets, type ProxyTarget } from "./ProxyTargets.ts"
import { type AnswerHead, badRequest, type CallerRequest, type Captures, type ProxyError, type Route } from "./Route.ts"
import type { Stages, SvcAnswer } from "./Stages.ts"

const refreshable = (target: ProxyTarget) =>
  target.credentials?.kind === "oauth2_authorization_code" || target.credentials?.kind === "oauth2_client_credentials"

const unusable = (error: unknown) =>
  new ServiceUnavailable({
    error:
      error instanceof CredentialInjectionError
        ? `connection credentials are not usable: ${error.message}`
        : "connection credentials are not usable",
    code: "credentials_unusable"
  })

/**
 * Stage: the label snapshot of the request (spec 2.5), frozen for its event; a 400 naming the key
 * when a request label contradicts the connection's (SECURITY.md: resource labels win).
 */
export const snapshotLabels = (
  target: ProxyTarget,
  actor: AuthenticatedActor,
  request: CallerRequest
): Record<string, string> | BadRequest => {
  const labels = labelSnapshot(target.row.labels, actor, request.labels)
  if (!(labels instanceof LabelConflict)) return labels
  return badRequest(
    `request label ${labels.key} conflicts with the connection's label`,
    "label_conflict",
    `labels.${labels.key}`,
    "the connection already has this label with another value; a request label cannot override it"
  )
}

/** Stage: a slot under the connection's cap, waiting at most the connect timeout. */
const admit = (gate: ConnectionGate, target: ProxyTarget): Effect.Effect<Release, ServiceUnavailable> => {
  const limit = target.definition.proxy.max_concurrent_requests
  const entered = gate.enter(target.row.id, limit, target.send.timeouts.connectMs)
  if (typeof entered === "function") return Effect.succeed(entered)
  return Effect.callback<Release, ServiceUnavailable>((resume) => {
    let abandoned = false
    void entered.then((release) => {
      // A caller that went away while queued hands its slot straight back.
      if (abandoned) release?.()
      else if (release !== undefined) resume(Effect.succeed(release))
      else
        resume(
          Effect.fail(
            new ServiceUnavailable({
              error: `connection ${target.row.id} has ${limit} requests in flight; retry later`,
              code: "connection_concurrency_exceeded"
            })
          )
        )
    })
    return Effect.sync(() => {
      abandoned = true
    })
  })
}

/** Stage: the connection's credentials in place, last, after everything that records the request. */
const inject = (target: ProxyTarget, request: CallerRequest): InjectedRequest | ServiceUnavailable => {
  try {
    return injectCredentials(target.definition.auth, target.credentials, request)
  } catch (error) {
    return unusable(error)
  }
}

/** Runs routes through the pipeline with `stages` between the request log and the gate. */
export const makePipeline = (stages: Stages) =>
  Effect.gen(function* () {
    const targets = yield* ProxyTargets
    const events = yield* ProxyEvents
    const gate = new ConnectionGate()
    const cap = events.recordingCap
    const context = yield* Effect.context<never>()
    // Stage: telemetry (spec 8.3), the outbound span around the send; undefined when off.
    const observed = outboundTelemetry(yield* Telemetry)
    const injectObserved: typeof inject =
      observed === undefined ? inject : (target, request) => observed.started(target, request, inject(target, request))

    /** Stage: the request event, opened (the request log, outermost). */
    const requestLog = (
      target: ProxyTarget,
      actor: AuthenticatedActor,
      request: CallerRequest,
      labels: Record<string, string>
    ) =>
      events.start({
        target,
        actorId: actor.id,
        method: request.method,
        url: request.url,
        labels
      })

    /** Stage: the event of a request that went upstream (`status` undefined: no answer). */
    const record = (
      start: ExchangeStart,
      request: CallerRequest,
      captures: Captures | undefined,
      rateLimit: RequestEventRateLimit | undefined,
      status: number | undefined,
      headers: RecordedHeaders | undefined,
      error: string | undefined
    ) => {
      observed?.ended(request, status, headers)
      return events.finish(start, {
        source: "upstream",
        status,
        durationMs: Date.now() - start.startedAt,
        rateLimit,
        recording:
          captures === undefined
            ? undefined
            : {
                requestHeaders: request.headers,
                requestBody: captures.request.result(),
                responseHeaders: headers,
                responseBody: captures.response.result(),
                error
              }
      })
    }

    /** Stage: the event of a request svc answered itself; the body was never read. */
    const recordSvcAnswer = (
      start: ExchangeStart,
      request: CallerRequest,
      answer: SvcAnswer,
      rateLimit: RequestEventRateLimit | undefined
    ) =>
      events.finish(start, {
        source: answer.source,
        status: answer.status,
        durationMs: Date.now() - start.startedAt,
        rateLimit,
        recording: events.recording
          ? {
              requestHeaders: request.headers,
              requestBody: captureSkipped(SkipReason.notRead),
              responseHeaders: answer.headers,
              responseBody: captureBuffered(answer.body, cap)
            }
          : undefined
      })

    /** The handler of `route`: its request through every stage. */
    const handler = <In, R extends CallerRequest, U extends AnswerHead, A>(
      route: Route<In, R, U, A>
    ): ((actor: AuthenticatedActor, id: string, input: In) => Effect.Effect<A, ProxyError>) => {
      const answerBySvc = (
        start: ExchangeStart,
        request: R,
        answer: SvcAnswer,
        rateLimit: RequestEventRateLimit | undefined
      ) => {
        recordSvcAnswer(start, request, answer, rateLimit)
        return route.answer(request, answer)
      }

      const exchange = Effect.fnUntraced(function* (
        actor: AuthenticatedActor,
        target: ProxyTarget,
        request: R,
        retried: boolean
      ): Effect.fn.Return<A, ProxyError> {
        const labels = snapshotLabels(target, actor, request)
        if (labels instanceof BadRequest) return yield* labels
        const start = requestLog(target, actor, request, labels)
        const limited = yield* stages.limit(start)
        const rateLimit = limited.rateLimit
        if (limited._tag === "Answer") return yield* answerBySvc(start, request, limited.answer, rateLimit)

        const release = yield* admit(gate, target)
        const injected = injectObserved(target, request)
        if (injected instanceof ServiceUnavailable) {
          release()
          return yield* injected
        }
        const captures: Captures | undefined = events.recording
          ? { request: new BodyCapture(cap), response: new BodyCapture(cap) }
          : undefined
        const sent = yield* route.send(request, injected, target.send, captures).pipe(
          Effect.result,
          Effect.onInterrupt(() => Effect.sync(release))
        )
        if (sent._tag === "Failure") {
          release()
          // A request the guard refused never left: it is the caller's error, not an exchange.
          if (!refusedBeforeLeaving.has(sent.failure.reason)) {
            record(start, request, captures, rateLimit, undefined, undefined, sent.failure.message)
          }
          return yield* outboundHttpError(sent.failure)
        }

        const answer = sent.success
        yield* stages.answered(start, answer.status, answer.headers)
        let settled = false
        const settle = (error: string | undefined) => {
          if (settled) return
          settled = true
          release()
          record(start, request, captures, rateLimit, answer.status, answer.headers as RecordedHeaders, error)
        }
        route.whenOver(answer, settle)
        if (answer.status === 401 && request.replayable && !retried && refreshable(target)) {
          // An OAuth2 token the upstream refused: one refresh (single flight), one retry.
          const renewed = yield* targets.afterUnauthorized(target)
          if (renewed !== undefined) {
            settle(undefined)
            route.discard(answer)
            return yield* exchange(actor, renewed, request, true)
          }
        }
        return yield* route.relay(request, answer)
      })

      return Effect.fn(route.span)(function* (actor: AuthenticatedActor, id: string, input: In) {
        const target = yield* targets.get(actor, id)
        const request = route.read(input)
        if (request instanceof BadRequest) return yield* request
        return yield* exchange(actor, target, request, false)
      })
    }

    /** The fast `_proxy_raw` over the same stages, gate and event writers (`FastExchange.ts`). */
    const fast = (outbound: Outbound["Service"]) =>
      makeFastExchange({
        targets,
        events,
        outbound,
        stages,
        gate,
        context,
        snapshotLabels,
        requestLog,
        inject: injectObserved,
        record,
        recordSvcAnswer,
        refreshable
      })

    return { handler, fast }
  })
