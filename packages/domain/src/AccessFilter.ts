/**
 * Permissions as row filters (spec 5.8): which rows of a resource a caller may see, as data a
 * repository compiles into SQL, and the same decision in memory.
 */
import type { Permission } from "./Auth.ts"
import {
  isNamespacePath,
  listMatches,
  type PermissionActor,
  type PermissionSubject,
  pathMatches,
  renderNamespacePattern
} from "./PermissionMatcher.ts"

/** One grant as a row filter: a namespace scope and, when present, the only ids it allows. */
export interface AccessClause {
  readonly namespace:
    | { readonly _tag: "Any" }
    | { readonly _tag: "Path"; readonly path: string; readonly subtree: boolean }
  readonly ids: ReadonlyArray<string> | undefined
}

/**
 * Which rows of `resource` a caller may `verb`, as data a repository compiles into a predicate:
 * a row passes when some grant clause matches it and, with restrictions, some restriction clause
 * too. Agrees with `isAllowed` for every (namespace, id) (spec 5.8: lists are filtered).
 */
export interface AccessFilter {
  readonly grants: ReadonlyArray<AccessClause>
  readonly restrictions: ReadonlyArray<AccessClause> | undefined
}

const clausesOf = (
  permissions: ReadonlyArray<Permission>,
  subject: PermissionSubject,
  resource: string,
  verb: string
): Array<AccessClause> => {
  const out: Array<AccessClause> = []
  for (const permission of permissions) {
    if (!listMatches(permission.resources, resource) || !listMatches(permission.verbs, verb)) continue
    const namespace = renderNamespacePattern(permission.namespace, subject)
    if (namespace !== undefined) out.push({ namespace, ids: permission.resourceIds })
  }
  return out
}

/** The {@link AccessFilter} of a caller for `resource`:`verb`. */
export const accessFilter = (
  actor: PermissionActor & { readonly restrictions?: ReadonlyArray<Permission> | undefined },
  resource: string,
  verb: string
): AccessFilter => ({
  grants: clausesOf(actor.permissions, actor, resource, verb),
  restrictions: actor.restrictions === undefined ? undefined : clausesOf(actor.restrictions, actor, resource, verb)
})

const clauseAllows = (clause: AccessClause, namespace: string, id: string): boolean =>
  (clause.ids === undefined || clause.ids.includes(id)) &&
  (clause.namespace._tag === "Any" || pathMatches(clause.namespace.path, clause.namespace.subtree, namespace))

/** In-memory evaluation of an {@link AccessFilter} for one row. */
export const accessAllows = (filter: AccessFilter, namespace: string, id: string): boolean =>
  isNamespacePath(namespace) &&
  filter.grants.some((clause) => clauseAllows(clause, namespace, id)) &&
  (filter.restrictions === undefined || filter.restrictions.some((clause) => clauseAllows(clause, namespace, id)))
