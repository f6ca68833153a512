/**
 * Encryption-key resource operations (spec 2.1, SECURITY.md "Encryption at rest"): a key gets its
 * first data key version in the create transaction, `_rotate` adds the next one, and every change
 * drops the cached namespace → key resolutions. The key material itself is never exposed.
 */
import type { BadRequest } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { makeId } from "@svc/domain/Ids"
import type { CreateKey, Key, UpdateKey } from "@svc/domain/Key"
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import type { KeyRow } from "@svc/sql/Rows"
import { Context, Effect, Layer } from "effect"
import { Encryption } from "../crypto/Encryption.ts"
import { type ListPage, type ListRequest, Listing } from "./Listing.ts"
import * as Present from "./Presenters.ts"
import * as Kinds from "./ResourceKinds.ts"
import { type ResourceError, ResourceOps } from "./ResourceOps.ts"

/** Key CRUD and rotation for the HTTP handlers. */
export class Keys extends Context.Service<
  Keys,
  {
    readonly create: (actor: AuthenticatedActor, body: CreateKey) => Effect.Effect<Key, ResourceError>
    readonly list: (actor: AuthenticatedActor, query: ListRequest) => Effect.Effect<ListPage<Key>, BadRequest>
    readonly get: (actor: AuthenticatedActor, id: string) => Effect.Effect<Key, ResourceError>
    readonly update: (actor: AuthenticatedActor, id: string, body: UpdateKey) => Effect.Effect<Key, ResourceError>
    readonly remove: (actor: AuthenticatedActor, id: string) => Effect.Effect<void, ResourceError>
    /** Adds the next data key version (permission `keys:update`). */
    readonly rotate: (actor: AuthenticatedActor, id: string) => Effect.Effect<Key, ResourceError>
  }
>()("@svc/server/Keys") {
  static readonly layerNoDeps: Layer.Layer<Keys, never, ResourceOps | Listing | Encryption | DataKeyRepo> =
    Layer.effect(
      Keys,
      Effect.gen(function* () {
        const ops = yield* ResourceOps
        const listing = yield* Listing
        const encryption = yield* Encryption
        const dataKeys = yield* DataKeyRepo
        const invalidate = Effect.sync(() => encryption.invalidate())
        // A key from before encryption existed has no data key yet: it gets version 1 on first use.
        const present = (rows: ReadonlyArray<KeyRow>) =>
          Effect.map(Effect.orDie(dataKeys.latestVersions(rows.map((row) => row.id))), (versions) =>
            rows.map((row) => Present.key(row, versions.get(row.id) ?? 1))
          )
        const presentOne = (row: KeyRow) => Effect.map(present([row]), (keys) => keys[0]!)

        return Keys.of({
          create: (actor, body) => {
            const id = makeId("key")
            return ops
              .create(actor, Kinds.keys, {
                id,
                namespace: body.namespace,
                name: body.name,
                labels: body.labels,
                annotations: body.annotations,
                columns: {},
                afterInsert: encryption.provisionKey(id)
              })
              .pipe(Effect.tap(invalidate), Effect.flatMap(presentOne))
          },
          list: (actor, query) =>
            Effect.flatMap(
              listing.list(actor, Kinds.keys, query, (row) => row),
              (page) => Effect.map(present(page.items), (items) => ({ ...page, items }))
            ),
          get: (actor, id) => Effect.flatMap(ops.load(actor, Kinds.keys, id, "get"), presentOne),
          update: (actor, id, body) =>
            Effect.flatMap(
              ops.update(actor, Kinds.keys, id, {
                name: body.name,
                labels: body.labels,
                annotations: body.annotations
              }),
              presentOne
            ),
          remove: (actor, id) => ops.remove(actor, Kinds.keys, id).pipe(Effect.andThen(invalidate)),
          rotate: (actor, id) =>
            Effect.flatMap(ops.load(actor, Kinds.keys, id, "update"), (row) =>
              Effect.map(encryption.rotate(id), ({ version }) => Present.key(row, version))
            ).pipe(Effect.withSpan("Keys.rotate"))
        })
      })
    )
}
