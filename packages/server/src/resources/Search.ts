/** Resource search (spec 4.1, 5.8): names and user-label values, permissions applied first. */
import type { BadRequest } from "@svc/domain/Errors"
import type { SearchHit } from "@svc/domain/http/SearchApi"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { userLabelsOf } from "@svc/domain/Labels"
import { accessFilter } from "@svc/domain/AccessFilter"
import type { ResourceType } from "@svc/domain/Resource"
import { SearchRepo } from "@svc/sql/SearchRepo"
import { Context, Effect, Layer } from "effect"
import * as Kinds from "./ResourceKinds.ts"

const matchOf = ["exact", "prefix", "substring", "label"] as const

/** Ranked search across resource types. */
export class Search extends Context.Service<
  Search,
  {
    readonly resources: (
      actor: AuthenticatedActor,
      query: {
        readonly q: string
        readonly resourceType?: ResourceType | undefined
        readonly limit?: number | undefined
      }
    ) => Effect.Effect<{ items: ReadonlyArray<SearchHit> }, BadRequest>
  }
>()("@svc/server/Search") {
  static readonly layerNoDeps: Layer.Layer<Search, never, SearchRepo> = Layer.effect(
    Search,
    Effect.gen(function* () {
      const repo = yield* SearchRepo
      return Search.of({
        resources: Effect.fn("Search.resources")(function* (actor, query) {
          const limit = query.limit ?? 50
          const types =
            query.resourceType === undefined ? (Object.keys(Kinds.byType) as Array<ResourceType>) : [query.resourceType]
          const hits: Array<SearchHit & { readonly rank: number }> = []
          for (const type of types) {
            const rows = yield* Effect.orDie(
              repo.search(
                Kinds.byType[type].table,
                accessFilter(actor, Kinds.byType[type].permission, "list"),
                query.q,
                limit
              )
            )
            for (const row of rows) {
              hits.push({
                resourceType: type,
                id: row.id,
                name: row.name,
                namespace: row.namespace,
                match: matchOf[row.rank] ?? "label",
                labels: userLabelsOf(row.labels),
                rank: row.rank
              })
            }
          }
          // spec 4.1: exact name, then name prefix, then substring and label-value matches.
          hits.sort(
            (a, b) =>
              Math.min(a.rank, 2) - Math.min(b.rank, 2) ||
              a.name.localeCompare(b.name) ||
              a.resourceType.localeCompare(b.resourceType) ||
              a.id.localeCompare(b.id)
          )
          return { items: hits.slice(0, limit).map(({ rank: _, ...hit }) => hit) }
        })
      })
    })
  )
}
