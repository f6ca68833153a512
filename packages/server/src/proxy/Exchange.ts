/**
 * The one exchange of the proxy data plane (spec 4.2, 4.6 rule 5; ARCHITECTURE "request path"):
 * the only orchestration of the stages, for both routes and both doors, in plain code:
 *
 *   (target resolved by the door, or by an agent's `call_connection`) → one path and method form → label snapshot → request log →
 *   rate limit + reactive cool-down (one counter-store round trip) → concurrency gate →
 *   credential injection (and the outbound span) → send → the reactive limiter sees the answer
 *   (`X-Svc-*` of the upstream dropped) → relay → record
 *
 * A route (`Route.ts`) only reads the request, carries its leg upstream and writes answers; a door
 * only finds the caller and the target and says where the outcome goes (`Reply`). Effect runs only
 * at the boundaries that may wait: the limit stage (synchronous on the embedded counters, one
 * round trip on Redis), the reactive limiter's look at an answer, and an OAuth2 refresh after a 401.
 *
 * Release discipline: a slot of the gate, once taken, is given back exactly once. Without an
 * answer (credentials unusable, the send failed, the caller went away) at once; with an answer
 * when its body is over (at once when buffered, at the end of the stream otherwise), together
 * with its event. A caller that goes away before the answer abandons the exchange: the upstream
 * exchange is cancelled and no event is written. A 401 retried after a token refresh settles its
 * first exchange and runs the chain again from the label snapshot (a second event).
 */
import { BadRequest, ServiceUnavailable } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { LabelConflict, labelSnapshot } from "@svc/domain/Proxy"
import type { RequestEventRateLimit } from "@svc/domain/RequestEvent"
import { Cause, Context, Effect, Exit, Tracer } from "effect"
import { BodyCapture, captureBuffered, captureSkipped, SkipReason } from "../events/BodyCapture.ts"
import type { RecordedHeaders } from "../events/Recordings.ts"
import { CredentialInjectionError, type InjectedRequest, injectCredentials } from "../outbound/CredentialInjection.ts"
import { type OutboundError, outboundHttpError, refusedBeforeLeaving } from "../outbound/OutboundError.ts"
import { ConnectionGate, type Release } from "./ConnectionGate.ts"
import type { OutboundTelemetry } from "./OutboundTelemetry.ts"
import type { ExchangeStart, ProxyEvents } from "./ProxyEvents.ts"
import type { ProxyTarget, ProxyTargets } from "./ProxyTargets.ts"
import { normalisePath, upperMethod, withoutSvcHeaders } from "./RequestForm.ts"
import { type AnswerHead, badRequest, type CallerRequest, type Captures, type Leg, type Reply } from "./Route.ts"
import type { Stages, Verdict } from "./Stages.ts"

/** The snapshot label of a request an agent sent (docs/agents.md): `svc/agent/-/via=mcp`. */
export const agentViaLabel = "svc/agent/-/via"

/** Stage: the label snapshot (spec 2.5), frozen for the event; 400 naming a key a request label contradicts. */
const snapshotLabels = (
  target: ProxyTarget,
  actor: AuthenticatedActor,
  request: CallerRequest
): Record<string, string> | BadRequest => {
  const labels = labelSnapshot(target.row.labels, actor, request.labels)
  if (!(labels instanceof LabelConflict)) {
    // A system key (request labels cannot name `svc/`): rules can select agent traffic.
    if (request.via !== undefined) labels[agentViaLabel] = request.via
    return labels
  }
  return badRequest(
    `request label ${labels.key} conflicts with the connection's label`,
    "label_conflict",
    `labels.${labels.key}`,
    "the connection already has this label with another value; a request label cannot override it"
  )
}

/** Stage: the connection's credentials in place, last, after everything that records the request. */
const inject = (target: ProxyTarget, request: CallerRequest): InjectedRequest | ServiceUnavailable => {
  try {
    return injectCredentials(target.definition.auth, target.credentials, request)
  } catch (error) {
    return new ServiceUnavailable({
      error:
        error instanceof CredentialInjectionError
          ? `connection credentials are not usable: ${error.message}`
          : "connection credentials are not usable",
      code: "credentials_unusable"
    })
  }
}

const ignore = () => {}

const refreshable = (target: ProxyTarget) =>
  target.credentials?.kind === "oauth2_authorization_code" || target.credentials?.kind === "oauth2_client_credentials"

const tooBusy = (target: ProxyTarget, limit: number) =>
  new ServiceUnavailable({
    error: `connection ${target.row.id} has ${limit} requests in flight; retry later`,
    code: "connection_concurrency_exceeded"
  })

/** What the exchange runs over: the same instances for both doors, so caps and counts hold across them. */
export interface ExchangeDeps {
  readonly targets: ProxyTargets["Service"]
  readonly events: ProxyEvents["Service"]
  readonly stages: Stages
  /** The telemetry stage; undefined with telemetry off. */
  readonly telemetry: OutboundTelemetry | undefined
  /** The services the boundary effects run with. */
  readonly context: Context.Context<never>
}

/**
 * Runs `request` of `actor` through every stage to `target` over the route's `leg`, the outcome to
 * `reply`; `parent` is the request's server span (telemetry). Answers the function to call when
 * the caller goes away (it does nothing once the outcome was given).
 */
export type Exchange = <R extends CallerRequest, U extends AnswerHead>(
  leg: Leg<R, U>,
  actor: AuthenticatedActor,
  target: ProxyTarget,
  request: R,
  reply: Reply<U>,
  parent: Tracer.AnySpan | undefined
) => () => void

/** The exchange over `deps`, with its own concurrency gate. */
export const makeExchange = (deps: ExchangeDeps): Exchange => {
  const { targets, events, stages, telemetry } = deps
  const gate = new ConnectionGate()
  const cap = events.recordingCap
  const runFork = Effect.runForkWith(deps.context)

  /**
   * Runs a boundary effect: its exit now when it completes synchronously, else when it does.
   * `context`: the services with the request's span as parent (`contextOf`), one per exchange.
   */
  const runNow = <A>(
    effect: Effect.Effect<A>,
    context: Context.Context<never> | undefined,
    then: (exit: Exit.Exit<A>) => void
  ) => {
    const fiber = context === undefined ? runFork(effect) : Effect.runForkWith(context)(effect)
    const exit = fiber.pollUnsafe()
    if (exit !== undefined) then(exit)
    else fiber.addObserver(then)
  }

  /** The services with `parent` as the parent span (telemetry on): built once, shared by the exchange's effects. */
  const contextOf = (parent: Tracer.AnySpan | undefined) =>
    parent === undefined ? undefined : Context.add(deps.context, Tracer.ParentSpan, parent)

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
    telemetry?.ended(request, status, headers)
    events.finish(start, {
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

  /** One request's way through the stages (a retry after a refresh runs them again on the same object). */
  class Run<R extends CallerRequest, U extends AnswerHead> {
    /** The outcome was given (or the caller went away): nothing more is written. */
    private finished = false
    private abandoned = false
    private retried = false
    private target: ProxyTarget
    private start: ExchangeStart | undefined
    private rateLimit: RequestEventRateLimit | undefined
    private release: Release | undefined
    private captures: Captures | undefined
    private cancel: (() => void) | undefined

    private readonly leg: Leg<R, U>
    private readonly actor: AuthenticatedActor
    private readonly request: R
    private readonly reply: Reply<U>
    private readonly parent: Tracer.AnySpan | undefined
    private readonly context: Context.Context<never> | undefined

    constructor(
      leg: Leg<R, U>,
      actor: AuthenticatedActor,
      target: ProxyTarget,
      request: R,
      reply: Reply<U>,
      parent: Tracer.AnySpan | undefined
    ) {
      this.leg = leg
      this.actor = actor
      this.target = target
      this.request = request
      this.reply = reply
      this.parent = parent
      this.context = contextOf(parent)
    }

    /** The caller went away: before the outcome, the upstream exchange is cancelled and the slot given back. */
    readonly abandon = (): void => {
      if (this.finished) return
      this.finished = true
      this.abandoned = true
      this.cancel?.()
      this.release?.()
    }

    private broken(cause: Cause.Cause<unknown>) {
      if (this.finished) return
      this.finished = true
      this.release?.()
      this.reply.broken(cause)
    }

    /** Stages from the label snapshot to the limit. */
    begin(): void {
      const { target, request } = this
      const labels = snapshotLabels(target, this.actor, request)
      if (labels instanceof BadRequest) {
        this.finished = true
        this.reply.error(labels)
        return
      }
      // Stage: the request event, opened (the request log, outermost).
      this.start = events.start({ target, actorId: this.actor.id, method: request.method, url: request.url, labels })
      runNow(stages.limit(this.start), this.context, (exit) => {
        if (Exit.isFailure(exit)) this.broken(exit.cause)
        else this.limited(exit.value)
      })
    }

    /** After the limit stage: svc's own answer, or a slot under the connection's cap. */
    private limited(verdict: Verdict): void {
      if (this.finished) return
      this.rateLimit = verdict.rateLimit
      const start = this.start as ExchangeStart
      if (verdict._tag === "Answer") {
        this.finished = true
        const answer = verdict.answer
        events.finish(start, {
          source: answer.source,
          status: answer.status,
          durationMs: Date.now() - start.startedAt,
          rateLimit: this.rateLimit,
          recording: events.recording
            ? {
                requestHeaders: this.request.headers,
                requestBody: captureSkipped(SkipReason.notRead),
                responseHeaders: answer.headers,
                responseBody: captureBuffered(answer.body, cap)
              }
            : undefined
        })
        this.reply.svc(answer)
        return
      }
      // Stage: the concurrency gate, waiting at most the connect timeout.
      const target = this.target
      const limit = target.definition.proxy.max_concurrent_requests
      const entered = gate.enter(target.row.id, limit, target.send.timeouts.connectMs)
      if (typeof entered === "function") {
        this.send(entered)
        return
      }
      void entered.then((release) => {
        // A caller that went away while queued hands its slot straight back.
        if (this.finished) release?.()
        else if (release !== undefined) this.send(release)
        else {
          this.finished = true
          this.reply.error(tooBusy(target, limit))
        }
      })
    }

    /** Credential injection, then the send. */
    private send(release: Release): void {
      this.release = release
      const { target, request } = this
      const injected = inject(target, request)
      if (injected instanceof ServiceUnavailable) {
        this.finished = true
        release()
        this.reply.error(injected)
        return
      }
      // Stage: telemetry (spec 8.3), the outbound span around the send.
      telemetry?.started(target, request, injected, this.parent)
      this.captures = events.recording ? { request: new BodyCapture(cap), response: new BodyCapture(cap) } : undefined
      this.cancel = this.leg.send(request, injected, target.send, this.captures, this)
    }

    /** The send failed (`ExchangeCallbacks`). */
    onFailure(failure: OutboundError): void {
      if (this.finished) return
      this.finished = true
      this.release?.()
      // A request the guard refused never left: it is the caller's error, not an exchange.
      if (!refusedBeforeLeaving.has(failure.reason)) {
        record(
          this.start as ExchangeStart,
          this.request,
          this.captures,
          this.rateLimit,
          undefined,
          undefined,
          failure.message
        )
      }
      this.reply.error(outboundHttpError(failure))
    }

    /** The upstream answered (`ExchangeCallbacks`): the reactive limiter sees it, then it is relayed. */
    onAnswer(upstream: U): void {
      if (this.finished) {
        this.leg.discard(upstream)
        return
      }
      const answer = withoutSvcHeaders(upstream)
      const start = this.start as ExchangeStart
      const { request, captures, rateLimit, target } = this
      const release = this.release as Release
      const seen = stages.answered(start, answer.status, answer.headers)
      if (seen !== undefined) runNow(seen, this.context, ignore)
      let settled = false
      const settle = (error: string | undefined) => {
        if (settled) return
        settled = true
        release()
        record(start, request, captures, rateLimit, answer.status, answer.headers as RecordedHeaders, error)
      }
      this.leg.whenOver(answer, settle)
      if (answer.status === 401 && request.replayable && !this.retried && refreshable(target)) {
        // An OAuth2 token the upstream refused: one refresh (single flight), one retry.
        runNow(targets.afterUnauthorized(target), this.context, (exit) => {
          const renewed = Exit.isSuccess(exit) ? exit.value : undefined
          if (renewed === undefined || this.abandoned) return this.relay(answer)
          settle(undefined)
          this.leg.discard(answer)
          this.retried = true
          this.target = renewed
          this.release = undefined
          this.cancel = undefined
          this.begin()
        })
        return
      }
      this.relay(answer)
    }

    private relay(answer: U): void {
      if (this.finished) {
        this.leg.discard(answer)
        return
      }
      this.finished = true
      try {
        this.reply.relay(answer)
      } catch (defect) {
        // Never expected (an answer that does not encode): the standard 500.
        this.leg.discard(answer)
        this.reply.broken(Cause.die(defect))
      }
    }
  }

  return (leg, actor, target, request, reply, parent) => {
    normalisePath(request.url)
    const run = new Run(leg, actor, target, upperMethod(request), reply, parent)
    run.begin()
    return run.abandon
  }
}
