/**
 * The `Connection` entity (ARCHITECTURE "The Connection entity"), keyed by connection id: the
 * single owner of a connection's control state — the reactive cool-down (spec 2.9) and the
 * version migration lock (spec 4.3 rule 6). Changes are persisted messages handled in the
 * storage transaction (the state row and the reply commit together, so a redelivery after a crash
 * never applies a change twice); reads are volatile and answered from memory. Times are epoch
 * milliseconds. Handlers: `packages/server/src/worker/ConnectionEntityLive.ts`.
 */
import { ConnectionEntityType } from "@svc/domain/DurableNames"
import { maxMigrationLockTtlMs } from "@svc/domain/Migration"
import { Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"

/** A point in time as epoch milliseconds. */
export const EpochMillis = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** The cool-down a connection is in: the consecutive 429 count and the end, none once it has passed. */
export const CoolDown = Schema.Struct({
  consecutive429s: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  until: Schema.OptionFromNullOr(EpochMillis)
})
export type CoolDown = typeof CoolDown.Type

/** Who holds a connection's migration lock and when the hold lapses unless renewed. */
export const MigrationLockHolder = Schema.Struct({
  owner: Schema.NonEmptyString,
  expiresAt: EpochMillis
})
export type MigrationLockHolder = typeof MigrationLockHolder.Type

/** The caller now holds the lock until `expiresAt`. */
export const LockAcquired = Schema.TaggedStruct("Acquired", MigrationLockHolder.fields)

/** Another owner holds the lock until `expiresAt`; the caller does not. */
export const LockHeld = Schema.TaggedStruct("HeldBy", MigrationLockHolder.fields)

/** The outcome of `acquireMigrationLock`. */
export const AcquireResult = Schema.Union([LockAcquired, LockHeld])
export type AcquireResult = typeof AcquireResult.Type

const Millis = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * The connector's `rate_limiting` arithmetic in milliseconds (spec 2.9), as the reporting process
 * read it from the connection's connector version: the entity needs no connector lookup.
 */
export const CoolDownSettings = Schema.Struct({
  maxRetryAfterMs: Millis,
  defaultRetryAfterMs: Millis,
  exponentialBackoff: Schema.optionalKey(
    Schema.Struct({
      initialIntervalMs: Millis,
      multiplier: Schema.Finite.check(Schema.isGreaterThanOrEqualTo(1)),
      maxIntervalMs: Millis,
      jitterFraction: Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))
    })
  )
})
export type CoolDownSettings = typeof CoolDownSettings.Type

/**
 * An upstream answered 429 at `observedAt` (with the wait its `retry_after_headers` asked for as
 * `retryAfterMs` when one parsed): the streak grows, the cool-down length follows spec 2.9 under
 * `settings` (the spec defaults when absent), the end moves to the later of the current end and
 * the new one, and it is published to the cool-down store. Replies the resulting cool-down.
 * The entity bounds what a caller can ask for: the length never exceeds the `max_retry_after` of
 * the connector version the connection is on, and `observedAt` is never later than its clock.
 */
export const ReportUpstream429 = Rpc.make("reportUpstream429", {
  payload: {
    observedAt: EpochMillis,
    retryAfterMs: Schema.optionalKey(Millis),
    settings: Schema.optionalKey(CoolDownSettings)
  },
  success: CoolDown
})
  .annotate(ClusterSchema.Persisted, true)
  .annotate(ClusterSchema.WithTransaction, true)

/** An upstream call succeeded: the streak and the cool-down are cleared (also in the cool-down store). */
export const ReportSuccess = Rpc.make("reportSuccess")
  .annotate(ClusterSchema.Persisted, true)
  .annotate(ClusterSchema.WithTransaction, true)

/** Reads the current cool-down (volatile, from memory). */
export const GetCoolDown = Rpc.make("coolDown", { success: CoolDown })

/**
 * Takes the migration lock for `owner` for `ttlMs` from now (the entity's clock), unless another
 * owner holds an unexpired lock; the holder calling again renews its hold. A hold is never longer
 * than the longest task timeout plus the lock grace (`maxMigrationLockTtlMs`).
 */
export const AcquireMigrationLock = Rpc.make("acquireMigrationLock", {
  payload: {
    owner: Schema.NonEmptyString,
    ttlMs: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: maxMigrationLockTtlMs }))
  },
  success: AcquireResult
})
  .annotate(ClusterSchema.Persisted, true)
  .annotate(ClusterSchema.WithTransaction, true)

/** Frees the migration lock if `owner` holds it (even expired); true when it did. */
export const ReleaseMigrationLock = Rpc.make("releaseMigrationLock", {
  payload: { owner: Schema.NonEmptyString },
  success: Schema.Boolean
})
  .annotate(ClusterSchema.Persisted, true)
  .annotate(ClusterSchema.WithTransaction, true)

/** The current, unexpired holder of the migration lock (volatile, from memory). */
export const InspectMigrationLock = Rpc.make("inspectMigrationLock", {
  success: Schema.OptionFromNullOr(MigrationLockHolder)
})

/** The runner the entity lives on now, `host:port` (volatile): for operators and the failover tests. */
export const Whereabouts = Rpc.make("whereabouts", { success: Schema.String })

/** The `Connection` entity, keyed by connection id. */
export const ConnectionEntity = Entity.make(ConnectionEntityType, [
  ReportUpstream429,
  ReportSuccess,
  GetCoolDown,
  AcquireMigrationLock,
  ReleaseMigrationLock,
  InspectMigrationLock,
  Whereabouts
])
