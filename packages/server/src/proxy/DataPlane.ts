/**
 * The proxy data plane (spec 4.2, 2.5, 2.12; ARCHITECTURE "request path"): `_proxy` (an
 * envelope in, an envelope out) and `_proxy_raw` (both bodies stream), one exchange
 * (`Exchange.ts`) behind two doors (docs/proxy.md "Two doors"):
 *
 * - the cold door, the HttpApi handler: authenticated by the router's middleware, it loads the
 *   target in Effect (`ProxyTargets.get`, which answers 404/403/409/503), reads the request and
 *   hands off to the exchange; the handler's fiber waits for the outcome (the one `Effect.callback`
 *   bridge of the data plane);
 * - the warm door (`WarmDoor.ts`), the request hook of the node server: a remembered caller and a
 *   cached target, taken before the router.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { ServiceId } from "@svc/domain/Auth"
import { BadRequest, type Forbidden, type RateLimited } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import type { ProxyRequest } from "@svc/domain/Proxy"
import { Cause, Context, Effect, Layer } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { Outbound } from "../outbound/Outbound.ts"
import { RequestLimiter } from "../ratelimit/RequestLimiter.ts"
import { inboundSpanOf } from "../telemetry/InboundSpans.ts"
import { Telemetry } from "../telemetry/Telemetry.ts"
import { type AgentCallInput, type AgentResult, agentRateLimited, agentRequest, agentResult } from "./AgentCall.ts"
import { coldEnvelopeReply, type EnvelopeAnswer, envelopeLeg, readEnvelope } from "./EnvelopeRoute.ts"
import { makeExchange } from "./Exchange.ts"
import { outboundTelemetry } from "./OutboundTelemetry.ts"
import { ProxyCallers } from "./ProxyCallers.ts"
import { ProxyEvents } from "./ProxyEvents.ts"
import { ProxyTargets } from "./ProxyTargets.ts"
import { coldRawReply, rawLeg, readRaw } from "./RawRoute.ts"
import type { ProxyError } from "./Route.ts"
import { limiterStages, type Stages } from "./Stages.ts"
import { makeWarmDoor, type RequestHook } from "./WarmDoor.ts"

export { maxEnvelopeResponseBytes } from "./EnvelopeRoute.ts"
export type { ProxyError } from "./Route.ts"
export type { RequestHook } from "./WarmDoor.ts"

/** How many requests each door handed to the exchange in this process (tests assert which door answered). */
export interface DoorCounts {
  readonly warm: number
  readonly cold: number
}

export class DataPlane extends Context.Service<
  DataPlane,
  {
    /**
     * The cold door of `POST /api/v1/connections/{id}/_proxy`: the upstream's answer in an
     * envelope, or svc's own answer (a synthetic 429) as the HTTP response itself.
     */
    readonly proxy: (
      actor: AuthenticatedActor,
      id: string,
      request: ProxyRequest
    ) => Effect.Effect<EnvelopeAnswer, ProxyError>
    /**
     * The cold door of `/api/v1/connections/{id}/_proxy_raw`: answers the caller on `response`
     * directly, streaming; fails only before the upstream answer's head was written.
     */
    readonly proxyRaw: (
      actor: AuthenticatedActor,
      id: string,
      request: IncomingMessage,
      response: ServerResponse
    ) => Effect.Effect<void, ProxyError>
    /**
     * An agent's `call_connection` over MCP (docs/agents.md): the target as for `_proxy`, then the
     * connector's `agent_access` and the token's narrowing (403 `agent_access_denied`), then the
     * one exchange with the request marked `via: "mcp"`; svc's own 429 is `RateLimited`.
     */
    readonly agentCall: (
      actor: AuthenticatedActor,
      id: string,
      input: AgentCallInput
    ) => Effect.Effect<AgentResult, ProxyError | Forbidden | RateLimited>
    /** The warm door of `service`'s node server (`WarmDoor.ts`). */
    readonly warmDoor: (service: ServiceId) => RequestHook
    /** Requests each door handed to the exchange so far. */
    readonly doors: () => DoorCounts
  }
>()("@svc/server/DataPlane") {
  /** The data plane with `stages` between the request log and the concurrency gate (tests substitute them). */
  static readonly layerWith = (
    stages: Stages
  ): Layer.Layer<DataPlane, never, ProxyTargets | Outbound | ProxyEvents | ProxyCallers | SvcConfig> =>
    Layer.effect(
      DataPlane,
      Effect.gen(function* () {
        const outbound = yield* Outbound
        const targets = yield* ProxyTargets
        const events = yield* ProxyEvents
        const callers = yield* ProxyCallers
        const config = yield* SvcConfig
        const context = yield* Effect.context<never>()
        const exchange = makeExchange({
          targets,
          events,
          stages,
          telemetry: outboundTelemetry(yield* Telemetry),
          context
        })
        const raw = rawLeg(outbound)
        const envelope = envelopeLeg(outbound)
        const counts = { warm: 0, cold: 0 }

        /** The cold door's hand-off: the handler's fiber waits for the outcome; interrupting it abandons the exchange. */
        const handOff = <A>(start: (resume: (effect: Effect.Effect<A, ProxyError>) => void) => () => void) =>
          Effect.callback<A, ProxyError>((resume) => {
            counts.cold++
            return Effect.sync(start(resume))
          })

        /** The server span of the request the current fiber serves, when traced. */
        const currentSpan = (incoming: IncomingMessage | undefined) =>
          Effect.withFiber((fiber) =>
            Effect.succeed((incoming === undefined ? undefined : inboundSpanOf(incoming)) ?? fiber.cache.span)
          )

        const proxy = Effect.fn("DataPlane.proxy")(function* (
          actor: AuthenticatedActor,
          id: string,
          payload: ProxyRequest
        ) {
          const target = yield* targets.get(actor, id)
          const request = readEnvelope(payload)
          if (request instanceof BadRequest) return yield* request
          const parent = yield* currentSpan(undefined)
          return yield* handOff<EnvelopeAnswer>((resume) =>
            exchange(envelope, actor, target, request, coldEnvelopeReply(resume), parent)
          )
        })

        const proxyRaw = Effect.fn("DataPlane.proxyRaw")(function* (
          actor: AuthenticatedActor,
          id: string,
          incoming: IncomingMessage,
          response: ServerResponse
        ) {
          const target = yield* targets.get(actor, id)
          const request = readRaw({ request: incoming, response })
          if (request instanceof BadRequest) return yield* request
          const parent = yield* currentSpan(incoming)
          return yield* handOff<void>((resume) =>
            exchange(raw, actor, target, request, coldRawReply(request, resume), parent)
          )
        })

        const agentCall = Effect.fn("DataPlane.agentCall")(function* (
          actor: AuthenticatedActor,
          id: string,
          input: AgentCallInput
        ) {
          const target = yield* targets.get(actor, id)
          const request = agentRequest(target, actor.agentAccess, input)
          if (!("payload" in request)) return yield* request
          const parent = yield* currentSpan(undefined)
          return yield* Effect.callback<AgentResult, ProxyError | RateLimited>((resume) =>
            Effect.sync(
              exchange(
                envelope,
                actor,
                target,
                request,
                {
                  error: (error) => resume(Effect.fail(error)),
                  svc: (answer) => resume(Effect.fail(agentRateLimited(answer))),
                  // A 401 refreshes the credentials and the retry's answer may echo the new
                  // ones: redact those of the connection as it is now too.
                  relay: (answer) =>
                    resume(
                      targets.get(actor, id).pipe(
                        Effect.orElseSucceed(() => target),
                        Effect.map((current) => agentResult([target, current], answer))
                      )
                    ),
                  broken: (cause) => resume(Effect.failCause(cause as Cause.Cause<never>))
                },
                parent
              )
            )
          )
        })

        const runFork = Effect.runForkWith(context)
        const logDefect = (cause: Cause.Cause<unknown>) => {
          if (!Cause.hasInterruptsOnly(cause))
            runFork(Effect.logError("unhandled failure while serving a request", cause))
        }
        const warmDoor = (service: ServiceId) =>
          makeWarmDoor({
            service,
            callers,
            targets,
            exchange,
            raw,
            envelope,
            maxBodyBytes: config.http.maxBodyBytes,
            logDefect,
            took: () => {
              counts.warm++
            }
          })

        return DataPlane.of({ proxy, proxyRaw, agentCall, warmDoor, doors: () => ({ ...counts }) })
      })
    )

  /** The data plane with this process's rate limits and reactive limiter (`RequestLimiter`). */
  static readonly layerNoDeps: Layer.Layer<
    DataPlane,
    never,
    ProxyTargets | Outbound | ProxyEvents | ProxyCallers | SvcConfig | RequestLimiter
  > = Layer.unwrap(Effect.map(RequestLimiter, (limiter) => DataPlane.layerWith(limiterStages(limiter))))
}
