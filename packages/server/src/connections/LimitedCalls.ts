/**
 * OAuth2 calls through the request chain (spec 2.8 `request_types`, 2.12, 4.6): a token exchange,
 * refresh, client-credentials grant or revocation made for a connection is checked against the
 * rate-limit rules selecting its request type before it leaves (a rejection fails the call with
 * `OutboundError` `rate_limited`; the provider is not asked), and each call that left or was held
 * back leaves one request event of its type (host and path of the endpoint; never a body, a
 * header or a query, so no secret). The connection's reactive cool-down concerns its API, not its
 * provider's token endpoint: it neither holds these calls back nor learns from their answers.
 */
import { makeId } from "@svc/domain/Ids"
import type { RequestType } from "@svc/domain/RateLimitDefinition"
import {
  eventHost,
  eventPath,
  noRateLimit,
  type RequestEventRateLimit,
  type ResponseSource
} from "@svc/domain/RequestEvent"
import { Clock, Context, Effect, Layer } from "effect"
import { RequestEventSink } from "../events/RequestEventBuffer.ts"
import type { SendOutbound } from "../oauth/TokenEndpoint.ts"
import { logSafeTarget, OutboundError, refusedBeforeLeaving } from "../outbound/OutboundError.ts"
import { rejectionMessage, RequestLimiter } from "../ratelimit/RequestLimiter.ts"

/** The kinds of OAuth2 call, as rules select them and events name them. */
export type OAuthCallType = Extract<
  RequestType,
  "oauth2_token_exchange" | "oauth2_refresh" | "oauth2_revoke" | "oauth2_client_credentials"
>

/** The connection a call is made for (rule matching: namespace, labels, connector; its event). */
export interface CallSubject {
  readonly connectionId: string
  readonly namespace: string
  readonly connectorId: string
  readonly connectorVersion: number
  /** The connection's labels (a call has no caller's request labels). */
  readonly labels: Readonly<Record<string, string>>
  /** The actor on whose behalf the call is made; undefined for system work (the refresh sweep). */
  readonly actorId?: string | undefined
}

/** The subject of a stored connection. */
export const subjectOf = (row: {
  readonly id: string
  readonly namespace: string
  readonly connectorId: string
  readonly connectorVersion: number
  readonly labels: Readonly<Record<string, string>>
}): CallSubject => ({
  connectionId: row.id,
  namespace: row.namespace,
  connectorId: row.connectorId,
  connectorVersion: row.connectorVersion,
  labels: row.labels
})

export class LimitedCalls extends Context.Service<
  LimitedCalls,
  {
    /** `send` for one call of `type` made for `subject`: checked against the rules, recorded. */
    readonly send: (type: OAuthCallType, subject: CallSubject, send: SendOutbound) => SendOutbound
  }
>()("@svc/server/LimitedCalls") {
  static readonly layerNoDeps: Layer.Layer<LimitedCalls, never, RequestLimiter | RequestEventSink> = Layer.effect(
    LimitedCalls,
    Effect.gen(function* () {
      const limiter = yield* RequestLimiter
      const sink = yield* RequestEventSink

      const limited =
        (type: OAuthCallType, subject: CallSubject, send: SendOutbound): SendOutbound =>
        (request) =>
          Effect.gen(function* () {
            const started = yield* Clock.currentTimeMillis
            const record = (
              source: ResponseSource,
              status: number | undefined,
              rateLimit: RequestEventRateLimit | undefined
            ) =>
              Effect.map(Clock.currentTimeMillis, (end) =>
                sink.record({
                  id: makeId("req"),
                  timestamp: new Date(started).toISOString(),
                  namespace: subject.namespace,
                  type,
                  method: request.method,
                  host: eventHost(request.url),
                  path: eventPath(request.url),
                  response_status_code: status ?? null,
                  response_source: source,
                  connector_id: subject.connectorId,
                  connector_version: subject.connectorVersion,
                  connection_id: subject.connectionId,
                  actor_id: subject.actorId ?? null,
                  duration_ms: end - started,
                  labels: subject.labels,
                  ...(rateLimit ?? noRateLimit),
                  full_request_recorded: false
                })
              )

            const outcome = yield* limiter.check(
              {
                namespace: subject.namespace,
                labels: subject.labels,
                method: request.method,
                path: request.url.pathname,
                requestType: type,
                connectionId: subject.connectionId,
                connectorId: subject.connectorId,
                connectorVersion: subject.connectorVersion
              },
              { coolDown: false }
            )
            if (outcome.rejection !== undefined) {
              yield* record(outcome.rejection.source, 429, outcome.rateLimit)
              return yield* new OutboundError({
                reason: "rate_limited",
                target: logSafeTarget(request.url),
                detail: rejectionMessage(outcome.rejection)
              })
            }
            const sent = yield* Effect.result(send(request))
            if (sent._tag === "Failure") {
              if (!refusedBeforeLeaving.has(sent.failure.reason))
                yield* record("upstream", undefined, outcome.rateLimit)
              return yield* sent.failure
            }
            yield* record("upstream", sent.success.status, outcome.rateLimit)
            return sent.success
          })

      return LimitedCalls.of({ send: limited })
    })
  )
}
