/**
 * Label selectors (spec 2.6) as SQL predicates over a JSONB column holding a flat string→string
 * object. Positive clauses use the GIN-indexable `@>` and `?` operators (default `jsonb_ops`).
 */
import * as PgTypes from "@effect/sql-pg/PgTypes"
import type { Requirement, Selector } from "@svc/domain/Selector"
import type { SqlClient, Statement } from "effect/sql"

const requirementWhere = (
  sql: SqlClient.SqlClient,
  column: Statement.Fragment,
  requirement: Requirement
): Statement.Fragment => {
  switch (requirement._tag) {
    case "Equals":
      return sql`${column} @> ${PgTypes.jsonb({ [requirement.key]: requirement.value })}`
    case "NotEquals":
      return sql`NOT (${column} @> ${PgTypes.jsonb({ [requirement.key]: requirement.value })})`
    case "Exists":
      return sql`${column} ? ${requirement.key}`
    case "NotExists":
      return sql`NOT (${column} ? ${requirement.key})`
  }
}

/**
 * A predicate true exactly for rows whose `column` labels satisfy `selector` (as `matches` does);
 * `column` is an identifier, optionally qualified (`labels`, `t.labels`). No requirements: `TRUE`.
 */
export const selectorWhere = (sql: SqlClient.SqlClient, selector: Selector, column: string): Statement.Fragment => {
  if (selector.requirements.length === 0) return sql.literal("TRUE")
  const target = sql`${sql(column)}`
  return sql.and(selector.requirements.map((requirement) => requirementWhere(sql, target, requirement)))
}
