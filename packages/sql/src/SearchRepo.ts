/**
 * Resource search (spec 4.1): names and user-label values, ranked exact name, name prefix, then
 * name substring and label-value matches; each table filtered by the caller's access first.
 */
import type { AccessFilter } from "@svc/domain/AccessFilter"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { idColumnOf, type TableName } from "./ResourceRepo.ts"
import { accessWhere, escapeLike } from "./ResourceSql.ts"

/** One hit with its rank: 0 exact name, 1 name prefix, 2 name substring, 3 label value. */
export const SearchRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  namespace: Schema.String,
  labels: Schema.Record(Schema.String, Schema.String),
  rank: Schema.Number
})
export type SearchRow = typeof SearchRow.Type

const decodeRows = Schema.decodeUnknownEffect(Schema.Array(SearchRow))

/** Search over one resource table. */
export class SearchRepo extends Context.Service<
  SearchRepo,
  {
    readonly search: (
      table: TableName,
      access: AccessFilter,
      q: string,
      limit: number
    ) => Effect.Effect<ReadonlyArray<SearchRow>, SqlError>
  }
>()("@svc/sql/SearchRepo") {
  static readonly layer: Layer.Layer<SearchRepo, never, SqlClient.SqlClient> = Layer.effect(
    SearchRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const search = Effect.fn("SearchRepo.search")(function* (
        table: TableName,
        access: AccessFilter,
        q: string,
        limit: number
      ) {
        const id = idColumnOf(table)
        const prefix = `${escapeLike(q)}%`
        const substring = `%${escapeLike(q)}%`
        const rows = yield* sql`
          SELECT ${sql(id)} AS id, name, namespace, labels,
            CASE WHEN name = ${q} THEN 0 WHEN name ILIKE ${prefix} THEN 1 WHEN name ILIKE ${substring} THEN 2 ELSE 3 END AS rank
          FROM ${sql(table)}
          WHERE deleted_at IS NULL AND ${accessWhere(sql, access, { namespace: "namespace", id })}
            AND (name ILIKE ${substring} OR EXISTS (
              SELECT 1 FROM jsonb_each_text(labels) AS e WHERE e.key NOT LIKE 'svc/%' AND e.value ILIKE ${substring}))
          ORDER BY rank, name, ${sql(id)}
          LIMIT ${limit}`
        return yield* Effect.orDie(decodeRows(rows))
      })
      return SearchRepo.of({ search })
    })
  )
}
