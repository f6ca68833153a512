/**
 * The proxy data plane (spec 4.2, 2.5, 2.12; ARCHITECTURE "request path"): `_proxy` (an
 * envelope in, an envelope out) and `_proxy_raw` (both bodies stream), two routes through the
 * one pipeline (`Pipeline.ts`). Each request resolves its connection from the in-process cache,
 * freezes its label snapshot, opens its event, passes rate limits and the cool-down, waits
 * for a slot under the connection's concurrency cap, injects credentials last and leaves through
 * `Outbound` (host allow-list, connect-time address checks, no redirects followed). The event is
 * written after the answer, off the request's fiber.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import type { ProxyRequest, ProxyResponse } from "@svc/domain/Proxy"
import { Context, Effect, Layer } from "effect"
import type { HttpServerResponse } from "effect/http"
import { Outbound } from "../outbound/Outbound.ts"
import { envelopeRoute } from "./EnvelopeRoute.ts"
import { makePipeline } from "./Pipeline.ts"
import type { ProxyEvents } from "./ProxyEvents.ts"
import { ProxyTargets } from "./ProxyTargets.ts"
import { rawRoute } from "./RawRoute.ts"
import type { ProxyError } from "./Route.ts"
import { RequestLimiter } from "../ratelimit/RequestLimiter.ts"
import { limiterStages, type Stages } from "./Stages.ts"

export { maxEnvelopeResponseBytes } from "./EnvelopeRoute.ts"
export type { ProxyError } from "./Route.ts"

export class DataPlane extends Context.Service<
  DataPlane,
  {
    /**
     * `POST /api/v1/connections/{id}/_proxy`: the upstream's answer in an envelope, or svc's own
     * answer (a synthetic 429) as the HTTP response itself.
     */
    readonly proxy: (
      actor: AuthenticatedActor,
      id: string,
      request: ProxyRequest
    ) => Effect.Effect<ProxyResponse | HttpServerResponse.HttpServerResponse, ProxyError>
    /**
     * `/api/v1/connections/{id}/_proxy_raw`: answers the caller on `response` directly, streaming;
     * fails only before the upstream answer's head was written.
     */
    readonly proxyRaw: (
      actor: AuthenticatedActor,
      id: string,
      request: IncomingMessage,
      response: ServerResponse
    ) => Effect.Effect<void, ProxyError>
    /**
     * The fast path of `_proxy_raw` (`FastExchange.ts`): takes the request and answers it in plain
     * code when the connection's target is cached and fresh for `actor`; false, with nothing
     * touched, when the request must take `proxyRaw`.
     */
    readonly tryFastRaw: (
      actor: AuthenticatedActor,
      id: string,
      request: IncomingMessage,
      response: ServerResponse
    ) => boolean
    /** True when connection `id`'s target is cached and fresh for `actor` (the fast path may take its requests). */
    readonly knowsFast: (actor: AuthenticatedActor, id: string) => boolean
    /**
     * The fast path of `_proxy`: the envelope (read and decoded by the caller of this) through
     * `proxy`, answered on `response`; false, with nothing written, when it must take the HttpApi
     * route.
     */
    readonly tryFastEnvelope: (
      actor: AuthenticatedActor,
      id: string,
      payload: ProxyRequest,
      response: ServerResponse
    ) => boolean
  }
>()("@svc/server/DataPlane") {
  /** The data plane with `stages` between the request log and the concurrency gate (tests substitute them). */
  static readonly layerWith = (stages: Stages): Layer.Layer<DataPlane, never, ProxyTargets | Outbound | ProxyEvents> =>
    Layer.effect(
      DataPlane,
      Effect.gen(function* () {
        const outbound = yield* Outbound
        const targets = yield* ProxyTargets
        const pipeline = yield* makePipeline(stages)
        const proxy = pipeline.handler(envelopeRoute(outbound))
        const raw = pipeline.handler(rawRoute(outbound))
        const fast = pipeline.fast(outbound)
        return DataPlane.of({
          proxy,
          proxyRaw: (actor, id, request, response) => raw(actor, id, { request, response }),
          tryFastRaw: fast.tryRaw,
          knowsFast: (actor, id) => targets.peek(actor, id) !== undefined,
          tryFastEnvelope: fast.tryEnvelope
        })
      })
    )

  /** The data plane with this process's rate limits and reactive limiter (`RequestLimiter`). */
  static readonly layerNoDeps: Layer.Layer<DataPlane, never, ProxyTargets | Outbound | ProxyEvents | RequestLimiter> =
    Layer.unwrap(Effect.map(RequestLimiter, (limiter) => DataPlane.layerWith(limiterStages(limiter))))
}
