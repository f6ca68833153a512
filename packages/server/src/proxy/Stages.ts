/**
 * The stages between a proxied request's request log and its concurrency gate (spec 4.6 rule 5):
 * rate-limit enforcement, then the connector's reactive limiter. A stage lets the request go on or
 * answers it itself without calling the upstream (a synthetic 429, spec 7); either way it may name
 * the rate-limit rules that matched, for the request event (spec 2.12). A stage never fails: a
 * store error lets the request through (spec 4.6 rule 8). Both are pass-throughs today.
 */
import type { RequestEventRateLimit, SvcResponseSource } from "@svc/domain/RequestEvent"
import { Effect } from "effect"
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

/** One stage: sees the request as its event will record it (target, actor, method, URL, labels). */
export type Stage = (request: ExchangeStart) => Effect.Effect<Verdict>

/** The stages of the pipeline, in chain order. */
export interface Stages {
  /** Rate-limit enforcement (spec 4.6): a rejecting enforce rule answers 429, `rate_limit`. */
  readonly rateLimit: Stage
  /** The connector's reactive limiter (spec 2.9): a cool-down answers 429, `connector_rate_limiter`. */
  readonly coolDown: Stage
}

const carryOn: Effect.Effect<Verdict> = Effect.succeed({ _tag: "Continue" })

/** Rate-limit enforcement before rules are evaluated: every request goes on. */
export const rateLimitPassThrough: Stage = () => carryOn

/** The reactive limiter before cool-downs are kept: every request goes on. */
export const coolDownPassThrough: Stage = () => carryOn

/** The stages of today's pipeline. */
export const passThroughStages: Stages = { rateLimit: rateLimitPassThrough, coolDown: coolDownPassThrough }
