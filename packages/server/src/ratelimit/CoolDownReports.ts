/**
 * How a proxy process tells a connection's `Connection` entity what the upstream answered
 * (spec 2.9; ARCHITECTURE "The Connection entity"): a 429 (the entity counts the streak, computes
 * the cool-down and publishes its end to the cool-down store) or a success after a streak (the
 * entity clears it). The entity may live on another process: callers never wait on these on a
 * request's fiber (`RequestLimiter` runs them detached).
 */
import { ConnectionEntity, type CoolDownSettings } from "@svc/cluster/ConnectionEntity"
import type { CoolDownPolicy } from "@svc/domain/CoolDown"
import { Context, Data, Effect, Layer, type Option } from "effect"
import type { Sharding } from "effect/cluster"

/** The entity could not be told (the cluster is unreachable, its storage failed, a mailbox is full). */
export class ReportFailed extends Data.TaggedError("ReportFailed")<{ readonly cause: unknown }> {}

/** One upstream 429 of a connection. */
export interface Upstream429 {
  /** When the answer arrived (epoch ms). */
  readonly observedAt: number
  /** The wait the upstream asked for through `retry_after_headers`, capped; undefined when none parsed. */
  readonly retryAfterMs: number | undefined
  /** The connector version's `rate_limiting` (never disabled: a disabled limiter reports nothing). */
  readonly policy: CoolDownPolicy
}

/** The settings the entity's arithmetic needs, from a policy. */
export const coolDownSettings = (policy: CoolDownPolicy): CoolDownSettings => ({
  maxRetryAfterMs: policy.maxRetryAfterMs,
  defaultRetryAfterMs: policy.defaultRetryAfterMs,
  ...(policy.exponentialBackoff === undefined ? {} : { exponentialBackoff: policy.exponentialBackoff })
})

export class CoolDownReports extends Context.Service<
  CoolDownReports,
  {
    /** Reports an upstream 429; the end of the connection's cool-down the entity decided (none: it ended already). */
    readonly upstream429: (
      connectionId: string,
      report: Upstream429
    ) => Effect.Effect<Option.Option<number>, ReportFailed>
    /** Reports an upstream answer other than 429 after a streak: the entity clears the streak. */
    readonly success: (connectionId: string) => Effect.Effect<void, ReportFailed>
  }
>()("@svc/server/ratelimit/CoolDownReports") {
  /** Through the cluster: persisted messages to the connection's `Connection` entity. */
  static readonly layer: Layer.Layer<CoolDownReports, never, Sharding.Sharding> = Layer.effect(
    CoolDownReports,
    Effect.map(ConnectionEntity.client, (client) =>
      CoolDownReports.of({
        upstream429: (connectionId, report) =>
          client(connectionId)
            .reportUpstream429({
              observedAt: Math.max(0, Math.floor(report.observedAt)),
              ...(report.retryAfterMs === undefined
                ? {}
                : { retryAfterMs: Math.max(0, Math.ceil(report.retryAfterMs)) }),
              settings: coolDownSettings(report.policy)
            })
            .pipe(
              Effect.map((coolDown) => coolDown.until),
              Effect.mapError((cause) => new ReportFailed({ cause }))
            ),
        success: (connectionId) =>
          client(connectionId)
            .reportSuccess()
            .pipe(Effect.mapError((cause) => new ReportFailed({ cause })))
      })
    )
  )
}
