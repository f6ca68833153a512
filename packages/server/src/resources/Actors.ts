/**
 * Actor operations (spec 2.1, 5). API-managed actors only: configured actors are read-only here
 * (configuration owns them). An actor's permissions stay inside its own namespace subtree, so a
 * tenant administrator cannot mint an actor that reaches other tenants.
 */
import type { Actor, CreateActor, UpdateActor } from "@svc/domain/Actor"
import type { Permission } from "@svc/domain/Auth"
import { BadRequest, Conflict } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { makeId } from "@svc/domain/Ids"
import { pathMatches } from "@svc/domain/PermissionMatcher"
import { ActorRepo } from "@svc/sql/ActorRepo"
import { jsonb } from "@svc/sql/ResourceRepo"
import type { ActorResourceRow } from "@svc/sql/Rows"
import { Context, Effect, Layer, Option } from "effect"
import { ActorDirectory } from "./ActorDirectory.ts"
import { type ListPage, type ListRequest, Listing } from "./Listing.ts"
import * as Present from "./Presenters.ts"
import * as Kinds from "./ResourceKinds.ts"
import { type ResourceError, ResourceOps } from "./ResourceOps.ts"

const within = (namespace: string, pattern: string): boolean => {
  if (namespace === "root") return true
  const template = pattern.indexOf("{{")
  if (template !== -1) return pattern.slice(0, template).startsWith(`${namespace}.`)
  return pathMatches(namespace, true, pattern.endsWith(".**") ? pattern.slice(0, -3) : pattern)
}

/** spec 5: an actor's grants may not reach outside its namespace (root actors excepted). */
const checkScope = (namespace: string, permissions: ReadonlyArray<Permission>) => {
  const details = permissions.flatMap((permission, index) =>
    within(namespace, permission.namespace)
      ? []
      : [{ field: `body.permissions[${index}].namespace`, message: `must be ${namespace} or inside it` }]
  )
  return details.length === 0
    ? Effect.void
    : Effect.fail(
        new BadRequest({
          error: "actor permissions must stay inside the actor's namespace",
          code: "permission_out_of_scope",
          details
        })
      )
}

const readOnly = (row: ActorResourceRow) =>
  row.source === "config"
    ? Effect.fail(
        new Conflict({
          error: `actor ${row.id} is managed by the configuration file (system_auth.actors)`,
          code: "actor_read_only"
        })
      )
    : Effect.void

/** Actor CRUD for the HTTP handlers; every write invalidates the authentication cache. */
export class Actors extends Context.Service<
  Actors,
  {
    readonly create: (actor: AuthenticatedActor, body: CreateActor) => Effect.Effect<Actor, ResourceError>
    readonly list: (actor: AuthenticatedActor, query: ListRequest) => Effect.Effect<ListPage<Actor>, BadRequest>
    readonly get: (actor: AuthenticatedActor, id: string) => Effect.Effect<Actor, ResourceError>
    readonly update: (actor: AuthenticatedActor, id: string, body: UpdateActor) => Effect.Effect<Actor, ResourceError>
    readonly remove: (actor: AuthenticatedActor, id: string) => Effect.Effect<void, ResourceError>
    /** Guard for label/annotation writes: configured actors are read-only. */
    readonly guard: (row: ActorResourceRow) => Effect.Effect<void, ResourceError>
  }
>()("@svc/server/Actors") {
  static readonly layerNoDeps: Layer.Layer<Actors, never, ResourceOps | Listing | ActorRepo | ActorDirectory> =
    Layer.effect(
      Actors,
      Effect.gen(function* () {
        const ops = yield* ResourceOps
        const listing = yield* Listing
        const actorRepo = yield* ActorRepo
        const directory = yield* ActorDirectory

        const create = Effect.fn("Actors.create")(function* (actor: AuthenticatedActor, body: CreateActor) {
          const permissions = body.permissions ?? []
          yield* checkScope(body.namespace, permissions)
          yield* ops.authorizeCreate(actor, Kinds.actors, body.namespace)
          const existing = yield* Effect.orDie(actorRepo.findByExternalId(body.externalId))
          if (Option.isSome(existing)) {
            return yield* new Conflict({
              error: `an actor with externalId "${body.externalId}" already exists`,
              code: "external_id_conflict"
            })
          }
          const row = yield* ops.create(actor, Kinds.actors, {
            id: makeId("act"),
            namespace: body.namespace,
            name: body.name,
            labels: body.labels,
            annotations: body.annotations,
            columns: { externalId: body.externalId, permissions: jsonb(permissions), source: "api" }
          })
          yield* directory.invalidate(row.externalId)
          return Present.actor(row)
        })

        const update = Effect.fn("Actors.update")(function* (actor: AuthenticatedActor, id: string, body: UpdateActor) {
          const row = yield* ops.update(
            actor,
            Kinds.actors,
            id,
            {
              name: body.name,
              labels: body.labels,
              annotations: body.annotations,
              columns: body.permissions === undefined ? {} : { permissions: jsonb(body.permissions) }
            },
            (current) =>
              Effect.andThen(
                body.permissions === undefined ? Effect.void : checkScope(current.namespace, body.permissions),
                readOnly(current)
              )
          )
          yield* directory.invalidate(row.externalId)
          return Present.actor(row)
        })

        const remove = Effect.fn("Actors.remove")(function* (actor: AuthenticatedActor, id: string) {
          const removed = yield* ops.remove(actor, Kinds.actors, id, readOnly)
          yield* directory.invalidate(removed.externalId)
        })

        return Actors.of({
          create,
          list: (actor, query) => listing.list(actor, Kinds.actors, query, Present.actor, { externalId: "externalId" }),
          get: (actor, id) => Effect.map(ops.load(actor, Kinds.actors, id, "get"), Present.actor),
          update,
          remove,
          guard: readOnly
        })
      })
    )
}
