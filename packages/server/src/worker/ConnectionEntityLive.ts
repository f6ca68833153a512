/**
 * Handlers of the `Connection` entity (ARCHITECTURE "The Connection entity"). On activation the
 * entity reads its `connection_controls` row (rehydration after passivation, a restart or a shard
 * move) and republishes a running cool-down to the cool-down store. Each change re-reads the row
 * under a row lock inside the message's storage transaction, writes it before replying, then
 * updates the in-memory copy that answers the volatile reads (a change whose transaction rolls
 * back is retried from the row, never from memory). Publishing to the cool-down store is
 * best effort: a store failure is logged, never fails the report (the state row is the truth and
 * the next activation republishes it). The entity trusts no caller beyond its bounds: a 429
 * report's cool-down is at most the `max_retry_after` of the connector version the connection is
 * on (read here, not taken from the report) and starts no later than now plus `maxClockSkewMs`; a
 * migration lock is held at most the longest task timeout plus its grace (the RPC's schema).
 */
import {
  ConnectionEntity,
  type CoolDown,
  type CoolDownSettings,
  type AcquireResult,
  type MigrationLockHolder
} from "@svc/cluster/ConnectionEntity"
import { type CoolDownPolicy, coolDownMillis, coolDownPolicy, defaultCoolDownPolicy } from "@svc/domain/CoolDown"
import { ReactiveLimit, defaultReactiveLimit } from "@svc/domain/ReactiveLimit"
import { type ConnectionControl, ConnectionControlRepo } from "@svc/sql/ConnectionControlRepo"
import { Clock, type Duration, Effect, Option, Random, Ref, Schema } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { CoolDownStore } from "../stores/CoolDownStore.ts"
import type { StoreUnavailable } from "../stores/CounterStore.ts"

/** Tuning of the entity. */
export interface Options {
  /** Idle time after which an entity leaves memory (rehydrated on its next message). Default 1 minute. */
  readonly maxIdleTime?: Duration.Input | undefined
}

/** The spec 2.9 policy of a report: its settings over the defaults (a report never comes from a disabled limiter). */
const policyOf = (settings: CoolDownSettings | undefined): CoolDownPolicy =>
  settings === undefined
    ? defaultCoolDownPolicy
    : {
        ...defaultCoolDownPolicy,
        maxRetryAfterMs: settings.maxRetryAfterMs,
        defaultRetryAfterMs: settings.defaultRetryAfterMs,
        exponentialBackoff: settings.exponentialBackoff
      }

/** How far ahead of the entity's clock a reporter's `observedAt` may be (clocks of two hosts differ). */
export const maxClockSkewMs = 10_000

const decodeReactiveLimit = Schema.decodeUnknownOption(ReactiveLimit)

/**
 * The longest cool-down the connector allows for this connection (spec 2.9 `max_retry_after`;
 * 0 when its limiter is disabled): from the stored `rate_limiting` of its current version, the
 * spec default for an unknown connection or a block that does not decode.
 */
const connectorCapMs = (rateLimiting: Option.Option<unknown>): number => {
  if (Option.isNone(rateLimiting)) return defaultCoolDownPolicy.maxRetryAfterMs
  const block = rateLimiting.value ?? undefined
  const limit = block === undefined ? defaultReactiveLimit : Option.getOrUndefined(decodeReactiveLimit(block))
  if (limit === undefined) return defaultCoolDownPolicy.maxRetryAfterMs
  const policy = coolDownPolicy(limit)
  return policy.disabled ? 0 : policy.maxRetryAfterMs
}

const coolDownView = (control: ConnectionControl, now: number): CoolDown => ({
  consecutive429s: control.consecutive429s,
  until: Option.filter(control.coolDownUntil, (until) => until > now)
})

const liveLock = (control: ConnectionControl, now: number): Option.Option<MigrationLockHolder> =>
  Option.filter(control.migrationLock, (lock) => lock.expiresAt > now)

const handlers = Effect.gen(function* () {
  const repo = yield* ConnectionControlRepo
  const store = yield* CoolDownStore
  const { entityId } = yield* Entity.CurrentAddress
  const runner = yield* Entity.CurrentRunnerAddress
  const runnerAddress = `${runner.host}:${runner.port}`
  const connectionId: string = entityId

  const bestEffort = (operation: string, effect: Effect.Effect<void, StoreUnavailable>) =>
    effect.pipe(
      Effect.catch((error) =>
        Effect.logWarning(`cool-down store ${operation} failed for connection ${connectionId}`, error)
      )
    )

  const publish = (control: ConnectionControl) =>
    Option.match(control.coolDownUntil, {
      onNone: () => bestEffort("clear", store.clear(connectionId)),
      onSome: (until) => bestEffort("publish", store.publish(connectionId, until))
    })

  const initial = yield* Effect.orDie(repo.find(connectionId))
  const state = yield* Ref.make(initial)
  if (Option.isSome(coolDownView(initial, yield* Clock.currentTimeMillis).until)) yield* publish(initial)

  /**
   * One change: the stored state (locked), the clock, then `decide` gives the reply and the next
   * state; a changed state is written before replying and mirrored in memory.
   */
  const change = <A>(decide: (current: ConnectionControl, now: number) => readonly [A, ConnectionControl]) =>
    Effect.gen(function* () {
      const current = yield* repo.findForUpdate(connectionId)
      const now = yield* Clock.currentTimeMillis
      const [reply, next] = decide(current, now)
      if (next !== current) yield* repo.save(connectionId, next, new Date(now))
      yield* Ref.set(state, next)
      return { reply, changed: next !== current, next }
    }).pipe(Effect.orDie)

  return ConnectionEntity.of({
    reportUpstream429: ({ payload }) =>
      Effect.gen(function* () {
        // the jitter sample (spec 2.9), drawn once per delivery
        const sample = yield* Random.next
        const requested = policyOf(payload.settings)
        const capMs = connectorCapMs(yield* Effect.orDie(repo.rateLimiting(connectionId)))
        const policy = { ...requested, maxRetryAfterMs: Math.min(requested.maxRetryAfterMs, capMs) }
        const { reply, next } = yield* change((current, now) => {
          const consecutive429s = current.consecutive429s + 1
          const observedAt = Math.min(payload.observedAt, now + maxClockSkewMs)
          const end = observedAt + (coolDownMillis(policy, consecutive429s, payload.retryAfterMs, sample) ?? 0)
          const until = Math.max(
            end,
            Option.getOrElse(current.coolDownUntil, () => 0)
          )
          const next: ConnectionControl = { ...current, consecutive429s, coolDownUntil: Option.some(until) }
          return [coolDownView(next, now), next]
        })
        yield* publish(next)
        return reply
      }),

    reportSuccess: () =>
      Effect.gen(function* () {
        const { changed, next } = yield* change((current) =>
          current.consecutive429s === 0 && Option.isNone(current.coolDownUntil)
            ? [undefined, current]
            : [undefined, { ...current, consecutive429s: 0, coolDownUntil: Option.none() }]
        )
        if (changed) yield* publish(next)
      }),

    coolDown: () => Rpc.fork(Effect.zipWith(Ref.get(state), Clock.currentTimeMillis, coolDownView)),

    acquireMigrationLock: ({ payload }) =>
      Effect.map(
        change((current, now): readonly [AcquireResult, ConnectionControl] => {
          const held = Option.getOrUndefined(liveLock(current, now))
          if (held !== undefined && held.owner !== payload.owner) return [{ _tag: "HeldBy", ...held }, current]
          const hold = { owner: payload.owner, expiresAt: now + payload.ttlMs }
          return [
            { _tag: "Acquired", ...hold },
            { ...current, migrationLock: Option.some(hold) }
          ]
        }),
        ({ reply }) => reply
      ),

    releaseMigrationLock: ({ payload }) =>
      Effect.map(
        change((current): readonly [boolean, ConnectionControl] =>
          Option.exists(current.migrationLock, (lock) => lock.owner === payload.owner)
            ? [true, { ...current, migrationLock: Option.none() }]
            : [false, current]
        ),
        ({ reply }) => reply
      ),

    inspectMigrationLock: () => Rpc.fork(Effect.zipWith(Ref.get(state), Clock.currentTimeMillis, liveLock)),
    whereabouts: () => Effect.succeed(runnerAddress)
  })
})

/**
 * Registers the `Connection` entity with the runner's `Sharding`; needs `ConnectionControlRepo`
 * and `CoolDownStore`. Idle entities passivate after `maxIdleTime`.
 */
export const layerNoDeps = (options?: Options) =>
  ConnectionEntity.toLayer(handlers, { maxIdleTime: options?.maxIdleTime ?? "1 minute" })
