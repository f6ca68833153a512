/**
 * Actor lookups for authentication, served from an in-process cache so a warm request runs no
 * SQL (ARCHITECTURE "request path"). Entries live 30 s (misses 5 s); writers call `invalidate`.
 */
import { Cache, Duration, Effect, Exit, Layer, Context, Option } from "effect"
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

const unavailable = new ServiceUnavailable({ error: "the database is unavailable", code: "store_unavailable" })

export class ActorDirectory extends Context.Service<
  ActorDirectory,
  {
    findByExternalId(externalId: string): Effect.Effect<Option.Option<ActorIdentity>, ServiceUnavailable>
    invalidate(externalId: string): Effect.Effect<void>
  }
>()("svc/server/ActorDirectory") {
  static readonly layerNoDeps = Layer.effect(
    ActorDirectory,
    Effect.gen(function* () {
      const repo = yield* ActorRepo
      const cache = yield* Cache.makeWith(
        (externalId: string) =>
          repo.findByExternalId(externalId).pipe(
            Effect.map(Option.map(toRecord)),
            Effect.tapError((cause) => Effect.logWarning("actor lookup failed", cause)),
            Effect.mapError(() => unavailable)
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
      return ActorDirectory.of({
        findByExternalId: (externalId) => Cache.get(cache, externalId),
        invalidate: (externalId) => Cache.invalidate(cache, externalId)
      })
    })
  )
}
