/**
 * The namespace of a connection started with `_initiate` when the caller names none (spec 4.1):
 * the connector's namespace when the caller may create connections there; otherwise the one
 * namespace below it where the caller holds `connections:create` through a permission naming that
 * exact namespace. Never inferred from wildcard permissions (`*`, `x.**`) or from several
 * candidates: then the caller must pass `intoNamespace`.
 */
import type { Permission } from "@svc/domain/Auth"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { isAllowed, listMatches, pathMatches, renderNamespacePattern } from "@svc/domain/PermissionMatcher"

/** The outcome of the choice. */
export type NamespaceChoice =
  | { readonly _tag: "Chosen"; readonly namespace: string }
  | { readonly _tag: "Ambiguous"; readonly reason: "wildcard" | "several" | "none" }

const createRequest = (namespace: string) => ({ namespace, resource: "connections", verb: "create" })

const grantsCreate = (permission: Permission) =>
  listMatches(permission.resources, "connections") && listMatches(permission.verbs, "create")

/** Picks the namespace for a connection of a connector living in `connectorNamespace`. */
export const chooseNamespace = (actor: AuthenticatedActor, connectorNamespace: string): NamespaceChoice => {
  const may = (namespace: string) =>
    isAllowed({ actor, restrictions: actor.restrictions, request: createRequest(namespace) })
  if (may(connectorNamespace)) return { _tag: "Chosen", namespace: connectorNamespace }
  const candidates = new Set<string>()
  let wildcard = false
  for (const permission of actor.permissions) {
    if (!grantsCreate(permission)) continue
    const rendered = renderNamespacePattern(permission.namespace, actor)
    if (rendered === undefined) continue
    if (rendered._tag === "Any") {
      wildcard = true
      continue
    }
    const below = pathMatches(connectorNamespace, true, rendered.path) && rendered.path !== connectorNamespace
    // A subtree grant reaching below the connector's namespace could mean any namespace there.
    const reachesBelow = rendered.subtree && (below || pathMatches(rendered.path, true, connectorNamespace))
    if (reachesBelow) wildcard = true
    else if (below && may(rendered.path)) candidates.add(rendered.path)
  }
  if (wildcard) return { _tag: "Ambiguous", reason: "wildcard" }
  const [only, ...others] = [...candidates]
  if (only === undefined) return { _tag: "Ambiguous", reason: "none" }
  if (others.length > 0) return { _tag: "Ambiguous", reason: "several" }
  return { _tag: "Chosen", namespace: only }
}
