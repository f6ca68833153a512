/** Rate-limit resource operations (spec 2.8, 4.6 CRUD); a write reloads this process's rule cache, if any. */
import { BadRequest } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { makeId } from "@svc/domain/Ids"
import type { CreateRateLimit, RateLimit, UpdateRateLimit } from "@svc/domain/RateLimit"
import { jsonb } from "@svc/sql/ResourceRepo"
import { Context, Effect, Layer, Option } from "effect"
import { RuleCache } from "../ratelimit/RuleCache.ts"
import { type ListPage, type ListRequest, Listing } from "./Listing.ts"
import * as Present from "./Presenters.ts"
import * as Kinds from "./ResourceKinds.ts"
import { type ResourceError, ResourceOps } from "./ResourceOps.ts"

const definitionColumns = (definition: CreateRateLimit["definition"]) => ({
  definition: jsonb(Present.encodeRateLimitDefinition(definition)),
  mode: definition.mode
})

/** Rate-limit CRUD for the HTTP handlers. */
export class RateLimits extends Context.Service<
  RateLimits,
  {
    readonly create: (actor: AuthenticatedActor, body: CreateRateLimit) => Effect.Effect<RateLimit, ResourceError>
    readonly list: (actor: AuthenticatedActor, query: ListRequest) => Effect.Effect<ListPage<RateLimit>, BadRequest>
    readonly get: (actor: AuthenticatedActor, id: string) => Effect.Effect<RateLimit, ResourceError>
    readonly update: (
      actor: AuthenticatedActor,
      id: string,
      body: UpdateRateLimit
    ) => Effect.Effect<RateLimit, ResourceError>
    readonly remove: (actor: AuthenticatedActor, id: string) => Effect.Effect<void, ResourceError>
  }
>()("@svc/server/RateLimits") {
  static readonly layerNoDeps: Layer.Layer<RateLimits, never, ResourceOps | Listing> = Layer.effect(
    RateLimits,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const listing = yield* Listing
      // Optional: a process without the proxy's rule cache has nothing to reload.
      const rules = yield* Effect.serviceOption(RuleCache)
      // spec 4.6 rule 6: a write applies in the writing process at once, elsewhere at the next reload
      const applied = <A, E>(write: Effect.Effect<A, E>): Effect.Effect<A, E> =>
        Option.isSome(rules) ? Effect.tap(write, () => rules.value.reload) : write
      return RateLimits.of({
        create: (actor, body) =>
          Effect.map(
            applied(
              ops.create(actor, Kinds.rateLimits, {
                id: makeId("rl"),
                namespace: body.namespace,
                name: body.name,
                labels: body.labels,
                annotations: body.annotations,
                columns: definitionColumns(body.definition)
              })
            ),
            Present.rateLimit
          ),
        list: (actor, query) => listing.list(actor, Kinds.rateLimits, query, Present.rateLimit),
        get: (actor, id) => Effect.map(ops.load(actor, Kinds.rateLimits, id, "get"), Present.rateLimit),
        update: (actor, id, body) =>
          Effect.map(
            applied(
              ops.update(
                actor,
                Kinds.rateLimits,
                id,
                {
                  name: body.name,
                  labels: body.labels,
                  annotations: body.annotations,
                  columns: body.definition === undefined ? {} : definitionColumns(body.definition)
                },
                (row) =>
                  // spec 2.8: changing the namespace means replacing the resource.
                  body.namespace !== undefined && body.namespace !== row.namespace
                    ? Effect.fail(
                        new BadRequest({
                          error: "a rate limit's namespace cannot change; create a new rule and delete this one",
                          code: "namespace_immutable",
                          details: [{ field: "body.namespace", message: "cannot be changed" }]
                        })
                      )
                    : Effect.void
              )
            ),
            Present.rateLimit
          ),
        remove: (actor, id) => Effect.asVoid(applied(ops.remove(actor, Kinds.rateLimits, id)))
      })
    })
  )
}
