/**
 * SQL building blocks shared by the resource repositories: permission filters, namespace
 * filters, keyset pagination and the mapping of unique violations to name conflicts.
 */
import type { AccessClause, AccessFilter } from "@svc/domain/AccessFilter"
import type { NamespaceFilter } from "@svc/domain/Resource"
import { Data } from "effect"
import type { SqlClient, Statement } from "effect/sql"

/**
 * A create or rename collided with a live resource's name (spec 2.2 rule 3) or another live
 * unique value; `constraint` names the index, for the caller to tell them apart (never shown).
 */
export class NameTaken extends Data.TaggedError("NameTaken")<{ readonly constraint: string }> {}

/** Escapes `%`, `_` and `\` for a LIKE pattern (default escape character). */
export const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`)

/** Rows whose `column` is `filter.path` or, for a subtree filter, a descendant of it. */
export const namespaceWhere = (
  sql: SqlClient.SqlClient,
  filter: NamespaceFilter,
  column = "namespace"
): Statement.Fragment =>
  filter.subtree
    ? sql`(${sql(column)} = ${filter.path} OR ${sql(column)} LIKE ${`${escapeLike(filter.path)}.%`})`
    : sql`${sql(column)} = ${filter.path}`

const clauseWhere = (
  sql: SqlClient.SqlClient,
  clause: AccessClause,
  columns: { readonly namespace: string; readonly id: string }
): Statement.Fragment => {
  const parts: Array<Statement.Fragment> = []
  if (clause.namespace._tag === "Path") parts.push(namespaceWhere(sql, clause.namespace, columns.namespace))
  if (clause.ids !== undefined) {
    parts.push(clause.ids.length === 0 ? sql`FALSE` : sql`${sql(columns.id)} IN ${sql.in(clause.ids)}`)
  }
  return parts.length === 0 ? sql`TRUE` : sql.and(parts)
}

const anyClause = (
  sql: SqlClient.SqlClient,
  clauses: ReadonlyArray<AccessClause>,
  columns: { readonly namespace: string; readonly id: string }
): Statement.Fragment =>
  clauses.length === 0 ? sql`FALSE` : sql.or(clauses.map((clause) => clauseWhere(sql, clause, columns)))

/** The rows an {@link AccessFilter} lets through (spec 5.8: lists filtered before they return). */
export const accessWhere = (
  sql: SqlClient.SqlClient,
  filter: AccessFilter,
  columns: { readonly namespace: string; readonly id: string } = { namespace: "namespace", id: "id" }
): Statement.Fragment =>
  filter.restrictions === undefined
    ? anyClause(sql, filter.grants, columns)
    : sql.and([anyClause(sql, filter.grants, columns), anyClause(sql, filter.restrictions, columns)])

/** A sortable column and how its cursor value is compared. */
export interface SortColumn {
  readonly column: string
  readonly type: "text" | "timestamptz" | "integer"
}

/** One page of a keyset-paginated list. */
export interface PageSpec {
  readonly table: string
  readonly idColumn: string
  readonly where: ReadonlyArray<Statement.Fragment>
  readonly sort: SortColumn
  readonly direction: "ASC" | "DESC"
  readonly after: { readonly value: string | null; readonly id: string } | undefined
  readonly limit: number
}

/**
 * `limit + 1` rows in (sort column, id) order after the cursor position, so the caller knows
 * whether another page follows. Ties on the sort column are broken by id, so no row is
 * skipped or repeated across pages.
 */
export const selectPage = (sql: SqlClient.SqlClient, spec: PageSpec): Statement.Statement<Record<string, unknown>> => {
  const column = sql(spec.sort.column)
  const id = sql(spec.idColumn)
  const where = [...spec.where]
  if (spec.after !== undefined) {
    const value = sql`CAST(${spec.after.value} AS ${sql.literal(spec.sort.type)})`
    where.push(
      spec.direction === "ASC"
        ? sql`(${column}, ${id}) > (${value}, ${spec.after.id})`
        : sql`(${column}, ${id}) < (${value}, ${spec.after.id})`
    )
  }
  const direction = sql.literal(spec.direction)
  return sql`SELECT * FROM ${sql(spec.table)} WHERE ${sql.and(where)}
    ORDER BY ${column} ${direction}, ${id} ${direction} LIMIT ${spec.limit + 1}`
}

/** The cursor value of a row's sort column (timestamps as ISO text at millisecond precision). */
export const sortValue = (value: unknown): string | null =>
  value === null || value === undefined
    ? null
    : value instanceof Date
      ? value.toISOString()
      : typeof value === "string"
        ? value
        : String(value)
