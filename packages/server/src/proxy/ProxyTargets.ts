/**
 * What a proxied request needs of its connection, served from an in-process cache so a warm
 * request runs no SQL (ARCHITECTURE "request path" steps 2 and 6): the row, its connector
 * version's definition, the decrypted credentials and the outbound options. Entries live 5 s;
 * writes evict at once, in this process and in every other (`ConnectionChanges`, pushed over
 * Redis pub/sub in production); while that push is down (Redis unreachable) entries live only
 * `unsubscribedTtl` and every cached entry is dropped when it drops or comes back. An OAuth2
 * token due for refresh is refreshed on load (`TokenRefresher`).
 * Stale-if-error: when a reload fails (the database is unavailable), a connection resolved in
 * the last `staleIfError` keeps being served from its last known state; one never resolved (or
 * resolved longer ago) answers 503 `store_unavailable`, never a 500. A load that has not answered
 * within `loadTimeout` counts as failed (`staleLoadTimeout` for a known connection during failures).
 */
import type { StoredCredentials } from "@svc/domain/ConnectorAuth"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { Conflict, Forbidden, NotFound, ServiceUnavailable } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import type { ConnectionRow } from "@svc/sql/Rows"
import { Cache, Cause, Clock, Context, Duration, Effect, Exit, Layer, MutableHashMap, Option } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { unsubscribedTtl } from "../stores/ChangeFeed.ts"
import { upstreamOptions } from "../outbound/OutboundOptions.ts"
import { TokenRefresher } from "../connections/TokenRefresher.ts"
import { ConnectionChanges } from "../resources/ConnectionChanges.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"
import { type InjectionPlaces, redactionTargets } from "../outbound/CredentialInjection.ts"
import type { SendOptions } from "../outbound/Outbound.ts"

/** A connection ready to carry proxied requests. */
export interface ProxyTarget {
  readonly row: ConnectionRow
  /** The connector's labels: the first of the effective label set of telemetry (spec 8.3). */
  readonly connectorLabels: Readonly<Record<string, string>>
  readonly definition: ConnectorDefinition
  readonly credentials: StoredCredentials | undefined
  /** Allowed hosts, private-network policy and timeouts of the connector. */
  readonly send: SendOptions
  /** Where the auth method puts credentials (what recordings redact). */
  readonly redact: InjectionPlaces
}

/** Failures of resolving a proxy target. */
export type TargetError = NotFound | Forbidden | Conflict | ServiceUnavailable

/** How long a resolved target is reused. */
export const targetTtl = Duration.seconds(5)

/**
 * Stale-if-error bound: while the database is unavailable, a target resolved at most this long
 * ago is served from its last known state (docs/proxy.md "When the database is unavailable").
 */
export const staleIfError = Duration.minutes(5)

/** How long a target served stale is reused before the database is asked again. */
export const staleRetry = Duration.seconds(1)

/** A load that takes longer (a database that does not answer) counts as failed. */
export const loadTimeout = Duration.seconds(5)

/** The same, for a connection with a last known state while loads are failing: a short wait. */
export const staleLoadTimeout = Duration.millis(250)

/** Last known states kept for stale-if-error (the oldest resolved is forgotten first). */
const lastKnownCapacity = 10_000

/** What one load answered: the target (or none), and whether it is a last known state. */
interface Loaded {
  readonly found: Option.Option<ProxyTarget>
  readonly stale: boolean
}

const unavailable = new ServiceUnavailable({ error: "the database is unavailable", code: "store_unavailable" })

export class ProxyTargets extends Context.Service<
  ProxyTargets,
  {
    /** The target of connection `id` if `actor` may proxy through it; 404/403 otherwise, 409 unless configured. */
    readonly get: (actor: AuthenticatedActor, id: string) => Effect.Effect<ProxyTarget, TargetError>
    /** Drops the cached entry of connection `id`. */
    readonly invalidate: (id: string) => Effect.Effect<void>
    /**
     * After the upstream answered 401 to `target`'s credentials: the target with new credentials
     * (someone else's refresh, or one refresh now, single flight), its cache entry dropped; undefined
     * when no refresh was possible or it failed (the 401 stands).
     */
    readonly afterUnauthorized: (target: ProxyTarget) => Effect.Effect<ProxyTarget | undefined>
    /**
     * The warm door's look-up, plain and synchronous, in the one cache `get` reads: the target of
     * connection `id` when its entry is loaded (not served stale) and unexpired, `actor` may proxy
     * through it and it is configured — exactly when `get` would succeed from its cache;
     * undefined otherwise (the cold door's `get` loads it and answers any error).
     */
    readonly peek: (actor: AuthenticatedActor, id: string) => ProxyTarget | undefined
  }
>()("@svc/server/ProxyTargets") {
  static readonly layerNoDeps: Layer.Layer<
    ProxyTargets,
    never,
    ResourceOps | ConnectorDefinitions | TokenRefresher | ConnectionChanges | SvcConfig
  > = Layer.effect(
    ProxyTargets,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const definitions = yield* ConnectorDefinitions
      const refresher = yield* TokenRefresher
      const changes = yield* ConnectionChanges
      const config = yield* SvcConfig
      const allowPrivate = config.outbound.allowPrivateNetworks

      const resolve = (id: string) =>
        Effect.gen(function* () {
          const found = yield* ops.find(Kinds.connections, id)
          if (Option.isNone(found)) return Option.none<ProxyTarget>()
          const row = found.value
          const definition = yield* definitions.get(row.connectorId, row.connectorVersion)
          const connector = yield* ops.find(Kinds.connectors, row.connectorId)
          const target: ProxyTarget = {
            row,
            connectorLabels: Option.isSome(connector) ? connector.value.labels : {},
            definition,
            // A failed refresh keeps the old token and lets the upstream decide.
            credentials: row.state === "configured" ? yield* refresher.usable(row, definition) : undefined,
            send: upstreamOptions(definition, allowPrivate),
            redact: redactionTargets(definition.auth)
          }
          return Option.some(target)
        })

      /** The last target resolved per connection, with when (ms); dropped on writes in this process. */
      const lastKnown = new Map<string, { readonly target: ProxyTarget; readonly at: number }>()
      const staleMs = Duration.toMillis(staleIfError)
      let warnedAt = Number.NEGATIVE_INFINITY
      let failedAt = Number.NEGATIVE_INFINITY

      const clock = yield* Clock.Clock

      const remember = (id: string, found: Option.Option<ProxyTarget>, now: number) => {
        lastKnown.delete(id)
        if (Option.isNone(found)) return
        lastKnown.set(id, { target: found.value, at: now })
        if (lastKnown.size > lastKnownCapacity) {
          const oldest = lastKnown.keys().next()
          if (oldest.done !== true) lastKnown.delete(oldest.value)
        }
      }

      /** A failed load (never an interruption): the last known state within the bound, else 503. */
      const fallBack = (id: string, cause: Cause.Cause<unknown>): Effect.Effect<Loaded, ServiceUnavailable> =>
        Effect.gen(function* () {
          const now = yield* Clock.currentTimeMillis
          failedAt = now
          const known = lastKnown.get(id)
          const usable = known !== undefined && now - known.at <= staleMs
          if (now - warnedAt >= 60_000) {
            warnedAt = now
            // The reason's tag only: a cause can carry statement text, never logged.
            const reason =
              cause.reasons.find(Cause.isFailReason)?.error ?? cause.reasons.find(Cause.isDieReason)?.defect
            const tag =
              typeof reason === "object" && reason !== null && "_tag" in reason ? String(reason._tag) : "defect"
            yield* Effect.logWarning(
              `proxy: loading a connection failed (${tag}); connections resolved in the last ` +
                `${Duration.format(staleIfError)} are served from their last known state, others answer 503`
            )
          }
          if (!usable) return yield* Effect.fail(unavailable)
          return { found: Option.some(known.target), stale: true } satisfies Loaded
        })

      /** While loads fail, a connection with a last known state waits for the database only briefly. */
      const timeoutOf = (id: string, now: number) =>
        now - failedAt <= staleMs && lastKnown.has(id) ? staleLoadTimeout : loadTimeout

      /**
       * The latest load of each connection being loaded. An invalidation forgets it: that load may
       * have read the row before the write, so its answer is not kept as the last known state (nor
       * that of an older load overtaken by a newer one).
       */
      const loading = new Map<string, number>()
      let loads = 0

      const load = (id: string): Effect.Effect<Loaded, ServiceUnavailable> => {
        const mine = ++loads
        return Effect.flatMap(Clock.currentTimeMillis, (now) => {
          loading.set(id, mine)
          return Effect.timeout(resolve(id), timeoutOf(id, now))
        }).pipe(
          Effect.tap((found) =>
            Effect.flatMap(Clock.currentTimeMillis, (now) =>
              Effect.sync(() => {
                if (loading.get(id) === mine) remember(id, found, now)
              })
            )
          ),
          Effect.ensuring(
            Effect.sync(() => {
              if (loading.get(id) === mine) loading.delete(id)
            })
          ),
          Effect.map((found): Loaded => ({ found, stale: false })),
          Effect.catchCause((cause) => (Cause.hasInterruptsOnly(cause) ? Effect.interrupt : fallBack(id, cause)))
        )
      }

      const cache = yield* Cache.makeWith(load, {
        capacity: 10_000,
        timeToLive: (exit) =>
          Exit.isFailure(exit)
            ? Duration.zero
            : exit.value.stale
              ? staleRetry
              : changes.live()
                ? targetTtl
                : unsubscribedTtl
      })
      const invalidate = (id: string) =>
        Effect.suspend(() => {
          loading.delete(id)
          lastKnown.delete(id)
          return Cache.invalidate(cache, id)
        })
      changes.onChange((id) => {
        loading.delete(id)
        // Eviction is synchronous bookkeeping; run it detached from the writer's fiber.
        Effect.runFork(invalidate(id))
      })
      // Notices of other processes may have been missed: nothing cached is trusted any more (the
      // last known states stay, for stale-if-error only).
      changes.onLost(() => {
        loading.clear()
        Effect.runFork(Cache.invalidateAll(cache))
      })

      const notFound = (id: string) => new NotFound({ error: `connection ${id} not found`, code: "not_found" })

      const get = (actor: AuthenticatedActor, id: string) =>
        Effect.flatMap(Cache.get(cache, id), ({ found }): Effect.Effect<ProxyTarget, TargetError> => {
          if (Option.isNone(found)) return Effect.fail(notFound(id))
          const target = found.value
          const namespace = target.row.namespace
          if (!ops.allowed(actor, Kinds.connections, "proxy", namespace, id)) {
            const visible =
              ops.allowed(actor, Kinds.connections, "get", namespace, id) ||
              ops.allowed(actor, Kinds.connections, "list", namespace, id)
            return Effect.fail(
              visible
                ? new Forbidden({ error: "permission connections:proxy is required", code: "forbidden" })
                : notFound(id)
            )
          }
          if (target.row.state !== "configured") {
            return Effect.fail(
              new Conflict({
                error: `connection ${id} is ${target.row.state}; only a configured connection carries requests`,
                code: "connection_not_configured"
              })
            )
          }
          return Effect.succeed(target)
        })

      const afterUnauthorized = (target: ProxyTarget) =>
        Effect.gen(function* () {
          const renewed = yield* refresher.afterUnauthorized(target.row, target.definition, target.credentials)
          if (renewed === undefined) return undefined
          yield* invalidate(target.row.id)
          return { ...target, credentials: renewed }
        })

      /** The cache's own entry of `id`, read in place: the same entry, expiry and clock `get` uses. */
      const peek = (actor: AuthenticatedActor, id: string): ProxyTarget | undefined => {
        const entry = MutableHashMap.get(cache.map, id)
        if (Option.isNone(entry)) return undefined
        const { expiresAt, fiber } = entry.value
        if (expiresAt === undefined || clock.currentTimeMillisUnsafe() >= expiresAt) return undefined
        const exit = fiber.pollUnsafe()
        if (exit === undefined || Exit.isFailure(exit) || exit.value.stale || Option.isNone(exit.value.found)) {
          return undefined
        }
        const target = exit.value.found.value
        if (target.row.state !== "configured") return undefined
        return ops.allowed(actor, Kinds.connections, "proxy", target.row.namespace, id) ? target : undefined
      }

      return ProxyTargets.of({ get, invalidate, afterUnauthorized, peek })
    })
  )
}
