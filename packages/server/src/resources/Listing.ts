/**
 * Resource lists (spec 4.1, API-CONVENTIONS "Lists"): filters, `order`, `limit` and opaque
 * cursors that carry the filters of the first call; rows the caller may not `list` are filtered
 * in SQL before they return (spec 5.8).
 */
import { BadRequest } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { accessFilter } from "@svc/domain/AccessFilter"
import {
  type CursorState,
  decodeCursor,
  defaultPageSize,
  encodeCursor,
  parseNamespaceFilter,
  parseOrder
} from "@svc/domain/Resource"
import { parseSelector, renderSelector, type Selector } from "@svc/domain/Selector"
import { idColumnOf, ResourceRepo } from "@svc/sql/ResourceRepo"
import type { SortColumn } from "@svc/sql/ResourceSql"
import { sortValue } from "@svc/sql/ResourceSql"
import { Context, Effect, Layer, Result } from "effect"
import { type EnvelopeRow, type Kind, type KindInfo, rowId } from "./ResourceKinds.ts"

/** The query of one list call, as decoded from the request. */
export interface ListRequest {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
  readonly order?: string | undefined
  readonly namespace?: string | undefined
  readonly name?: string | undefined
  readonly labelSelector?: Selector | undefined
  /** Equality filters by query name (`state`, `type`, …), mapped to columns by `columns`. */
  readonly equals?: Readonly<Record<string, string | undefined>> | undefined
}

/** A list response page (API-CONVENTIONS "Lists"): `cursor` is absent on the last page. */
export interface ListPage<A> {
  readonly items: ReadonlyArray<A>
  readonly cursor?: string
}

const sortColumns = (kind: KindInfo): Record<string, SortColumn> => ({
  createdAt: { column: "created_at", type: "timestamptz" },
  updatedAt: { column: "updated_at", type: "timestamptz" },
  name: { column: "name", type: "text" },
  id: { column: idColumnOf(kind.table), type: "text" }
})

const invalidCursor = new BadRequest({ error: "the cursor is not valid for this list", code: "invalid_cursor" })

/** Lists one resource type. */
export class Listing extends Context.Service<
  Listing,
  {
    readonly list: <Row extends EnvelopeRow, A>(
      actor: AuthenticatedActor,
      kind: Kind<Row>,
      request: ListRequest,
      /** Row → API item. */
      present: (row: Row) => A,
      /** Query name → column of the equality filters this list accepts. */
      columns?: Readonly<Record<string, string>>
    ) => Effect.Effect<ListPage<A>, BadRequest>
    /** `list` with an effectful presenter (e.g. one that decrypts). */
    readonly listWith: <Row extends EnvelopeRow, A>(
      actor: AuthenticatedActor,
      kind: Kind<Row>,
      request: ListRequest,
      present: (row: Row) => Effect.Effect<A>,
      columns?: Readonly<Record<string, string>>
    ) => Effect.Effect<ListPage<A>, BadRequest>
  }
>()("@svc/server/Listing") {
  static readonly layerNoDeps: Layer.Layer<Listing, never, ResourceRepo> = Layer.effect(
    Listing,
    Effect.gen(function* () {
      const repo = yield* ResourceRepo

      const listWith = <Row extends EnvelopeRow, A>(
        actor: AuthenticatedActor,
        kind: Kind<Row>,
        request: ListRequest,
        present: (row: Row) => Effect.Effect<A>,
        columns: Readonly<Record<string, string>> = {}
      ) =>
        Effect.gen(function* () {
          const sorts = sortColumns(kind)
          let state: CursorState
          if (request.cursor !== undefined) {
            const decoded = decodeCursor(request.cursor)
            if (decoded === undefined || !(decoded.order.field in sorts)) return yield* invalidCursor
            state = decoded
          } else {
            const filters: Record<string, string> = {}
            if (request.namespace !== undefined) filters.namespace = request.namespace
            if (request.name !== undefined) filters.name = request.name
            if (request.labelSelector !== undefined) filters.labelSelector = renderSelector(request.labelSelector)
            for (const [key, value] of Object.entries(request.equals ?? {}))
              if (value !== undefined) filters[key] = value
            const order = parseOrder(request.order ?? "createdAt ASC", Object.keys(sorts))
            if (typeof order === "string") return yield* new BadRequest({ error: order, code: "invalid_request" })
            state = { filters, order, after: { value: null, id: "" } }
          }
          const { filters } = state
          const namespace = filters.namespace === undefined ? undefined : parseNamespaceFilter(filters.namespace)
          if (filters.namespace !== undefined && namespace === undefined) return yield* invalidCursor
          let selector: Selector | undefined
          if (filters.labelSelector !== undefined) {
            const parsed = parseSelector(filters.labelSelector)
            if (Result.isFailure(parsed)) return yield* invalidCursor
            selector = parsed.success
          }
          const equals: Record<string, string> = {}
          for (const [key, value] of Object.entries(filters)) {
            if (key === "namespace" || key === "name" || key === "labelSelector") continue
            const column = columns[key]
            if (column === undefined) return yield* invalidCursor
            equals[column] = value
          }
          const sort = sorts[state.order.field]!
          const limit = request.limit ?? defaultPageSize
          const page = yield* Effect.orDie(
            repo.list(
              {
                table: kind.table,
                access: accessFilter(actor, kind.permission, "list"),
                namespace,
                name: filters.name,
                selector,
                equals,
                sort,
                direction: state.order.direction,
                after: request.cursor === undefined ? undefined : state.after,
                limit
              },
              kind.row
            )
          )
          const rows = page.rows as ReadonlyArray<Row>
          const last = rows[rows.length - 1]
          const cursor =
            page.more && last !== undefined
              ? encodeCursor({
                  filters,
                  order: state.order,
                  after: { value: sortValue(sortField(last, state.order.field)), id: rowId(last) }
                })
              : undefined
          const items = yield* Effect.forEach(rows, present)
          return cursor === undefined ? { items } : { items, cursor }
        }).pipe(Effect.withSpan("Listing.list", { attributes: { type: kind.type } }))

      return Listing.of({
        listWith,
        list: (actor, kind, request, present, columns) =>
          listWith(actor, kind, request, (row) => Effect.succeed(present(row)), columns)
      })
    })
  )
}

const sortField = (row: EnvelopeRow, field: string): unknown => {
  switch (field) {
    case "createdAt":
      return new Date(row.createdAt.epochMilliseconds)
    case "updatedAt":
      return new Date(row.updatedAt.epochMilliseconds)
    case "name":
      return row.name
    default:
      return rowId(row)
  }
}
