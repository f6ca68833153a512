/** Namespace operations (spec 2.1, 2.2 rule 7): paths under `root`, name = final segment. */
import { BadRequest, Conflict } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import type { CreateNamespace, Namespace, UpdateNamespace } from "@svc/domain/Namespace"
import { ResourceRepo } from "@svc/sql/ResourceRepo"
import { Context, Effect, Layer } from "effect"
import { type ListPage, type ListRequest, Listing } from "./Listing.ts"
import * as Present from "./Presenters.ts"
import * as Kinds from "./ResourceKinds.ts"
import { type ResourceError, ResourceOps } from "./ResourceOps.ts"

/** Namespace CRUD for the HTTP handlers. */
export class Namespaces extends Context.Service<
  Namespaces,
  {
    readonly create: (actor: AuthenticatedActor, body: CreateNamespace) => Effect.Effect<Namespace, ResourceError>
    readonly list: (actor: AuthenticatedActor, query: ListRequest) => Effect.Effect<ListPage<Namespace>, BadRequest>
    readonly get: (actor: AuthenticatedActor, path: string) => Effect.Effect<Namespace, ResourceError>
    readonly update: (
      actor: AuthenticatedActor,
      path: string,
      body: UpdateNamespace
    ) => Effect.Effect<Namespace, ResourceError>
    readonly remove: (actor: AuthenticatedActor, path: string) => Effect.Effect<void, ResourceError>
  }
>()("@svc/server/Namespaces") {
  static readonly layerNoDeps: Layer.Layer<Namespaces, never, ResourceOps | Listing | ResourceRepo> = Layer.effect(
    Namespaces,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const listing = yield* Listing
      const repo = yield* ResourceRepo
      return Namespaces.of({
        create: (actor, body) =>
          body.path === "root"
            ? Effect.fail(new Conflict({ error: "namespace root already exists", code: "name_conflict" }))
            : Effect.map(
                ops.create(actor, Kinds.namespaces, {
                  id: body.path,
                  namespace: body.path,
                  name: undefined,
                  labels: body.labels,
                  annotations: body.annotations,
                  columns: {}
                }),
                Present.namespace
              ),
        list: (actor, query) => listing.list(actor, Kinds.namespaces, query, Present.namespace),
        get: (actor, path) => Effect.map(ops.load(actor, Kinds.namespaces, path, "get"), Present.namespace),
        update: (actor, path, body) =>
          body.name !== undefined
            ? Effect.fail(
                new BadRequest({
                  error: "a namespace name cannot be written: it is the final segment of the path",
                  code: "name_read_only"
                })
              )
            : Effect.map(
                ops.update(actor, Kinds.namespaces, path, { labels: body.labels, annotations: body.annotations }),
                Present.namespace
              ),
        remove: (actor, path) =>
          Effect.asVoid(
            ops.remove(actor, Kinds.namespaces, path, (row) =>
              row.path === "root"
                ? Effect.fail(
                    new Conflict({ error: "the root namespace cannot be deleted", code: "namespace_not_empty" })
                  )
                : Effect.flatMap(Effect.orDie(repo.namespaceInUse(row.path)), (inUse) =>
                    inUse
                      ? Effect.fail(
                          new Conflict({
                            error: `namespace ${row.path} still holds namespaces or resources`,
                            code: "namespace_not_empty"
                          })
                        )
                      : Effect.void
                  )
            )
          )
      })
    })
  )
}
