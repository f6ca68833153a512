/**
 * Actor lookups for authentication, served from an in-process cache so a warm request runs no
 * SQL (ARCHITECTURE "request path"). Entries live 30 s (misses 5 s); writers call `invalidate`.
 * Stale-if-error: while the database is unavailable, an actor found in the last 5 minutes is
 * served from its last known record (docs/proxy.md); others answer 503 `store_unavailable`.
 */
import { Cache, Clock, Duration, Effect, Exit, Layer, Context, Option } from "effect"
import { ServiceUnavailable } from "@svc/domain/Errors"
import type { ActorIdentity } from "@svc/domain/http/Security"
import { ActorRepo, type ActorRow } from "@svc/sql/ActorRepo"

const toRecord = (row: ActorRow): ActorIdentity => ({
  id: row.id,
  externalId: row.externalId,
  namespace: row.namespace,
  name: row.name ?? row.id,
  labels: row.labels,
  annotations: row.annotations,
  permissions: row.permissions
})

/** Stale-if-error bound of actor records (the same as the proxy's connection targets). */
const staleIfErrorMs = 5 * 60_000

const unavailable = new ServiceUnavailable({ error: "the database is unavailable", code: "store_unavailable" })

export class ActorDirectory extends Context.Service<
  ActorDirectory,
  {
    findByExternalId(externalId: string): Effect.Effect<Option.Option<ActorIdentity>, ServiceUnavailable>
    invalidate(externalId: string): Effect.Effect<void>
    /** Calls `listener` (synchronously) with the external id of every actor invalidated in this process. */
    onInvalidate(listener: (externalId: string) => void): void
  }
>()("svc/server/ActorDirectory") {
  static readonly layerNoDeps = Layer.effect(
    ActorDirectory,
    Effect.gen(function* () {
      const repo = yield* ActorRepo
      const lastKnown = new Map<string, { readonly actor: ActorIdentity; readonly at: number }>()
      const cache = yield* Cache.makeWith(
        (externalId: string) =>
          repo.findByExternalId(externalId).pipe(
            // A database that does not answer counts as unavailable too.
            Effect.timeout(Duration.seconds(5)),
            Effect.map(Option.map(toRecord)),
            Effect.tap((found) =>
              Effect.map(Clock.currentTimeMillis, (now) => {
                lastKnown.delete(externalId)
                if (Option.isSome(found)) lastKnown.set(externalId, { actor: found.value, at: now })
                if (lastKnown.size > 10_000) lastKnown.delete(lastKnown.keys().next().value as string)
              })
            ),
            Effect.tapError((cause) => Effect.logWarning("actor lookup failed", cause)),
            Effect.catch(() =>
              Effect.flatMap(Clock.currentTimeMillis, (now) => {
                const known = lastKnown.get(externalId)
                return known !== undefined && now - known.at <= staleIfErrorMs
                  ? Effect.succeed(Option.some(known.actor))
                  : Effect.fail(unavailable)
              })
            )
          ),
        {
          capacity: 10_000,
          timeToLive: (exit) =>
            Exit.isSuccess(exit) && Option.isSome(exit.value)
              ? Duration.seconds(30)
              : Exit.isSuccess(exit)
                ? Duration.seconds(5)
                : Duration.zero
        }
      )
      const listeners: Array<(externalId: string) => void> = []
      return ActorDirectory.of({
        findByExternalId: (externalId) => Cache.get(cache, externalId),
        invalidate: (externalId) =>
          Effect.suspend(() => {
            lastKnown.delete(externalId)
            for (const listener of listeners) listener(externalId)
            return Cache.invalidate(cache, externalId)
          }),
        onInvalidate: (listener) => {
          listeners.push(listener)
        }
      })
    })
  )
}
