/**
 * The stages of the exchange (`Exchange.ts`) that may answer a proxied request without calling the upstream
 * (spec 4.6 rule 5, 7): rate-limit enforcement and the connector's reactive limiter, decided
 * together in one counter-store round trip (`RequestLimiter`), between the request log and the
 * concurrency gate; and the reactive limiter's look at each upstream answer. A stage never fails:
 * a store error lets the request through (spec 4.6 rule 8).
 */
import type { RequestEventRateLimit, SvcResponseSource } from "@svc/domain/RequestEvent"
import type { ResponseHeaders } from "@svc/domain/RetryAfter"
import { Effect } from "effect"
import {
  connectorCoolDownPolicy,
  type Rejection,
  type RequestLimiter,
  rejectionMessage
} from "../ratelimit/RequestLimiter.ts"
import type { ExchangeStart } from "./ProxyEvents.ts"

/** An answer svc gives without calling the upstream; `source` is the event's `response_source`. */
export interface SvcAnswer {
  readonly source: SvcResponseSource
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
}

/** What a stage decided; `rateLimit` fills the event's `rate_limit_*` fields when rules matched. */
export type Verdict =
  | { readonly _tag: "Continue"; readonly rateLimit?: RequestEventRateLimit | undefined }
  | { readonly _tag: "Answer"; readonly answer: SvcAnswer; readonly rateLimit?: RequestEventRateLimit | undefined }

/** The stages of the exchange. */
export interface Stages {
  /**
   * Rate-limit enforcement, then the reactive limiter (spec 4.6 rule 5): a rejecting enforce rule
   * answers 429 `rate_limit`, else a running cool-down answers 429 `connector_rate_limiter`.
   */
  readonly limit: (request: ExchangeStart) => Effect.Effect<Verdict>
  /**
   * The upstream answered `status` with `headers` (before the body): returns at once. Undefined:
   * nothing to do for this answer (most answers: no effect is run for them).
   */
  readonly answered: (
    request: ExchangeStart,
    status: number,
    headers: ResponseHeaders
  ) => Effect.Effect<void> | undefined
}

const carryOn: Effect.Effect<Verdict> = Effect.succeed({ _tag: "Continue" })

/** Stages that let every request through and keep no cool-downs (tests of the rest of the exchange). */
export const passThroughStages: Stages = { limit: () => carryOn, answered: () => undefined }

const encoder = new TextEncoder()

/**
 * The synthetic 429 (spec 7; API-CONVENTIONS "Rate limiting"): `Retry-After` in whole seconds,
 * `X-Svc-Ratelimited: true`, the firing rule in `X-Svc-Ratelimit` (none for a cool-down), body
 * `{error, rate_limit_id, retry_after_seconds}`.
 */
export const rejectionAnswer = (rejection: Rejection): SvcAnswer => {
  const seconds = String(rejection.retryAfterSeconds)
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "retry-after": seconds,
    "x-svc-ratelimited": "true"
  }
  if (rejection.ruleId !== null) headers["x-svc-ratelimit"] = rejection.ruleId
  return {
    source: rejection.source,
    status: 429,
    headers,
    body: encoder.encode(
      JSON.stringify({
        error: rejectionMessage(rejection),
        rate_limit_id: rejection.ruleId,
        retry_after_seconds: rejection.retryAfterSeconds
      })
    )
  }
}

/** The stages over this process's `RequestLimiter`; requests are of type `proxy`. */
export const limiterStages = (limiter: RequestLimiter["Service"]): Stages => ({
  limit: (request) => {
    const row = request.target.row
    return Effect.map(
      limiter.check({
        namespace: row.namespace,
        labels: request.labels,
        method: request.method,
        path: request.url.pathname,
        requestType: "proxy",
        connectionId: row.id,
        connectorId: row.connectorId,
        connectorVersion: row.connectorVersion
      }),
      (outcome): Verdict =>
        outcome.rejection === undefined
          ? { _tag: "Continue", rateLimit: outcome.rateLimit }
          : { _tag: "Answer", answer: rejectionAnswer(outcome.rejection), rateLimit: outcome.rateLimit }
    )
  },
  answered: (request, status, headers) =>
    // An answer other than 429 matters only to a connection in a cool-down streak.
    status !== 429 && !limiter.watching(request.target.row.id)
      ? undefined
      : limiter.upstreamAnswered({
          connectionId: request.target.row.id,
          policy: connectorCoolDownPolicy(request.target.definition),
          startedAt: request.startedAt,
          status,
          headers
        })
})
