/** Encryption-key resource operations (spec 2.1); the key material itself is not handled here. */
import type { BadRequest } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { makeId } from "@svc/domain/Ids"
import type { CreateKey, Key, UpdateKey } from "@svc/domain/Key"
import { Context, Effect, Layer } from "effect"
import { type ListPage, type ListRequest, Listing } from "./Listing.ts"
import * as Present from "./Presenters.ts"
import * as Kinds from "./ResourceKinds.ts"
import { type ResourceError, ResourceOps } from "./ResourceOps.ts"

/** Key CRUD for the HTTP handlers. */
export class Keys extends Context.Service<
  Keys,
  {
    readonly create: (actor: AuthenticatedActor, body: CreateKey) => Effect.Effect<Key, ResourceError>
    readonly list: (actor: AuthenticatedActor, query: ListRequest) => Effect.Effect<ListPage<Key>, BadRequest>
    readonly get: (actor: AuthenticatedActor, id: string) => Effect.Effect<Key, ResourceError>
    readonly update: (actor: AuthenticatedActor, id: string, body: UpdateKey) => Effect.Effect<Key, ResourceError>
    readonly remove: (actor: AuthenticatedActor, id: string) => Effect.Effect<void, ResourceError>
  }
>()("@svc/server/Keys") {
  static readonly layer: Layer.Layer<Keys, never, ResourceOps | Listing> = Layer.effect(
    Keys,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const listing = yield* Listing
      return Keys.of({
        create: (actor, body) =>
          Effect.map(
            ops.create(actor, Kinds.keys, {
              id: makeId("key"),
              namespace: body.namespace,
              name: body.name,
              labels: body.labels,
              annotations: body.annotations,
              columns: {}
            }),
            Present.key
          ),
        list: (actor, query) => listing.list(actor, Kinds.keys, query, Present.key),
        get: (actor, id) => Effect.map(ops.load(actor, Kinds.keys, id, "get"), Present.key),
        update: (actor, id, body) =>
          Effect.map(
            ops.update(actor, Kinds.keys, id, { name: body.name, labels: body.labels, annotations: body.annotations }),
            Present.key
          ),
        remove: (actor, id) => Effect.asVoid(ops.remove(actor, Kinds.keys, id))
      })
    })
  )
}
