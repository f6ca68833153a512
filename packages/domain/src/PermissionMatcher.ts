/**
 * Permission matching (spec 5): namespace paths, namespace matchers with templates, and the
 * actor-grant ∩ token-restriction decision used by the auth middleware and by list filtering.
 *
 * Namespace matcher grammar (a permission's `namespace`):
 * - `*` or `**` alone: every namespace.
 * - `root.a.b`: exactly that namespace.
 * - `root.a.**`: `root.a` itself and every descendant `root.a.…` (never a sibling such as `root.ab`).
 * - Templates `{{external_id}}`, `{{labels.<key>}}`, `{{annotations.<key>}}` may appear anywhere in
 *   the path part; they are rendered against the backing actor before matching. Each rendered value
 *   must itself be one valid namespace segment (lowercase, no `.`, no `*`): anything else — a
 *   missing key, an empty, dotted, upper-case or wildcard value — makes the permission not match.
 * - Anything else (e.g. `root.*`, `root.**.x`, unknown placeholders) is invalid and never matches.
 */
import { Schema } from "effect"
import type { Permission } from "./Auth.ts"

/** Longest accepted namespace path, in characters. */
export const namespacePathMaxLength = 512

const segmentPattern = /^[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?$/

/** True when `value` is one namespace segment: `[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?`. */
export const isNamespaceSegment = (value: string): boolean => segmentPattern.test(value)

/** True when `value` is `root` followed by zero or more `.segment`s, at most 512 characters. */
export const isNamespacePath = (value: string): boolean => {
  if (value.length > namespacePathMaxLength) return false
  const segments = value.split(".")
  if (segments[0] !== "root") return false
  for (let i = 1; i < segments.length; i++) {
    if (!segmentPattern.test(segments[i]!)) return false
  }
  return true
}

/** A namespace path: `root` then dot-separated lowercase segments (`root`, `root.acme.eu-1`). */
export const NamespacePath = Schema.String.check(
  Schema.makeFilter((value: string) => isNamespacePath(value), {
    expected: "a namespace path such as root.acme (lowercase segments of [a-z0-9_-])"
  })
)
export type NamespacePath = typeof NamespacePath.Type

/** The parts of an actor that templates render against. */
export interface PermissionSubject {
  readonly externalId: string
  readonly labels: Readonly<Record<string, string>>
  readonly annotations: Readonly<Record<string, string>>
}

/** The backing actor with its configured permissions. */
export interface PermissionActor extends PermissionSubject {
  readonly permissions: ReadonlyArray<Permission>
}

/** What a request needs: `resourceId` absent for lists, creates and other id-less operations. */
export interface PermissionRequest {
  readonly namespace: string
  readonly resource: string
  readonly verb: string
  readonly resourceId?: string | undefined
}

type Piece =
  | { readonly _tag: "Literal"; readonly text: string }
  | { readonly _tag: "ExternalId" }
  | { readonly _tag: "Label"; readonly key: string }
  | { readonly _tag: "Annotation"; readonly key: string }

type CompiledMatcher =
  | { readonly _tag: "Invalid" }
  | { readonly _tag: "Any" }
  | { readonly _tag: "Fixed"; readonly path: string; readonly subtree: boolean }
  | { readonly _tag: "Template"; readonly pieces: ReadonlyArray<Piece>; readonly subtree: boolean }

const invalid: CompiledMatcher = { _tag: "Invalid" }
const placeholderPattern = /\{\{\s*([^{}]*?)\s*\}\}/g

const parsePlaceholder = (body: string): Piece | undefined => {
  if (body === "external_id") return { _tag: "ExternalId" }
  if (body.startsWith("labels.") && body.length > 7) return { _tag: "Label", key: body.slice(7) }
  if (body.startsWith("annotations.") && body.length > 12) return { _tag: "Annotation", key: body.slice(12) }
  return undefined
}

const compile = (pattern: string): CompiledMatcher => {
  if (pattern === "*" || pattern === "**") return { _tag: "Any" }
  const subtree = pattern.endsWith(".**")
  const base = subtree ? pattern.slice(0, -3) : pattern
  const pieces: Array<Piece> = []
  let last = 0
  for (const match of base.matchAll(placeholderPattern)) {
    if (match.index > last) pieces.push({ _tag: "Literal", text: base.slice(last, match.index) })
    const piece = parsePlaceholder(match[1]!)
    if (piece === undefined) return invalid
    pieces.push(piece)
    last = match.index + match[0].length
  }
  if (last < base.length) pieces.push({ _tag: "Literal", text: base.slice(last) })
  if (pieces.every((piece) => piece._tag === "Literal")) {
    return isNamespacePath(base) ? { _tag: "Fixed", path: base, subtree } : invalid
  }
  for (const piece of pieces) {
    if (piece._tag === "Literal" && /[{}*]/.test(piece.text)) return invalid
  }
  // A template must form a valid path when every placeholder renders to a minimal segment.
  const probe = pieces.map((piece) => (piece._tag === "Literal" ? piece.text : "a")).join("")
  return isNamespacePath(probe) ? { _tag: "Template", pieces, subtree } : invalid
}

const cacheLimit = 4096
const cache = new Map<string, CompiledMatcher>()

const compiled = (pattern: string): CompiledMatcher => {
  let result = cache.get(pattern)
  if (result === undefined) {
    result = compile(pattern)
    if (cache.size >= cacheLimit) cache.clear()
    cache.set(pattern, result)
  }
  return result
}

/** True when `pattern` is a well-formed namespace matcher (validate configuration with this). */
export const isNamespacePattern = (pattern: string): boolean => compiled(pattern)._tag !== "Invalid"

/** A namespace matcher as accepted in a permission: path, `x.**`, `*`/`**`, or a template. */
export const NamespacePattern = Schema.String.check(
  Schema.makeFilter((value: string) => isNamespacePattern(value), {
    expected: "a namespace matcher: a path, path.**, ** or a {{…}} template"
  })
)

const lookup = (record: Readonly<Record<string, string>>, key: string): string | undefined => {
  if (!Object.hasOwn(record, key)) return undefined
  const value: unknown = record[key]
  return typeof value === "string" ? value : undefined
}

const renderValue = (piece: Piece, subject: PermissionSubject): string | undefined => {
  switch (piece._tag) {
    case "Literal":
      return piece.text
    case "ExternalId":
      return subject.externalId
    case "Label":
      return lookup(subject.labels, piece.key)
    case "Annotation":
      return lookup(subject.annotations, piece.key)
  }
}

// spec 5.5: a missing value makes the permission fail; a value must be one plain segment.
const render = (pieces: ReadonlyArray<Piece>, subject: PermissionSubject): string | undefined => {
  let out = ""
  for (const piece of pieces) {
    const value = renderValue(piece, subject)
    if (value === undefined) return undefined
    if (piece._tag !== "Literal" && !segmentPattern.test(value)) return undefined
    out += value
  }
  return isNamespacePath(out) ? out : undefined
}

/** True when `namespace` is `path` or, with `subtree`, a descendant of it (never a sibling like `root.ab`). */
export const pathMatches = (path: string, subtree: boolean, namespace: string): boolean =>
  namespace === path ||
  (subtree && namespace.length > path.length && namespace.startsWith(path) && namespace[path.length] === ".")

/**
 * Renders a matcher against `subject`: the concrete `path` (and whether it is a subtree), `any`
 * for `*`/`**`, or `undefined` when invalid or a template value is missing or unsafe.
 */
export const renderNamespacePattern = (
  pattern: string,
  subject: PermissionSubject
):
  | { readonly _tag: "Any" }
  | { readonly _tag: "Path"; readonly path: string; readonly subtree: boolean }
  | undefined => {
  const matcher = compiled(pattern)
  switch (matcher._tag) {
    case "Invalid":
      return undefined
    case "Any":
      return { _tag: "Any" }
    case "Fixed":
      return { _tag: "Path", path: matcher.path, subtree: matcher.subtree }
    case "Template": {
      const path = render(matcher.pieces, subject)
      return path === undefined ? undefined : { _tag: "Path", path, subtree: matcher.subtree }
    }
  }
}

/** True when namespace matcher `pattern`, rendered against `subject`, matches `namespace`. */
export const matchesNamespace = (pattern: string, subject: PermissionSubject, namespace: string): boolean => {
  if (!isNamespacePath(namespace)) return false
  const rendered = renderNamespacePattern(pattern, subject)
  if (rendered === undefined) return false
  return rendered._tag === "Any" || pathMatches(rendered.path, rendered.subtree, namespace)
}

/** True when a permission's resources or verbs list grants `value` (`*` grants any). */
export const listMatches = (allowed: ReadonlyArray<string>, value: string): boolean =>
  allowed.includes(value) || allowed.includes("*")

const scopeMatches = (
  permission: Permission,
  subject: PermissionSubject,
  namespace: string,
  resource: string,
  verb: string
): boolean =>
  listMatches(permission.resources, resource) &&
  listMatches(permission.verbs, verb) &&
  matchesNamespace(permission.namespace, subject, namespace)

/**
 * One permission against one request. `resourceIds` absent grants every id; present, it grants
 * only the listed ids (exact strings, `*` is not special) and never an id-less request.
 */
export const permissionMatches = (
  permission: Permission,
  subject: PermissionSubject,
  request: PermissionRequest
): boolean => {
  if (permission.resourceIds !== undefined) {
    if (request.resourceId === undefined || !permission.resourceIds.includes(request.resourceId)) return false
  }
  return scopeMatches(permission, subject, request.namespace, request.resource, request.verb)
}

const anyMatches = (
  permissions: ReadonlyArray<Permission>,
  subject: PermissionSubject,
  request: PermissionRequest
): boolean => {
  for (const permission of permissions) {
    if (permissionMatches(permission, subject, request)) return true
  }
  return false
}

/**
 * spec 5.1, 5.5: allowed iff one of the actor's permissions matches and, when the token carries
 * restrictions, one restriction matches too (restrictions only narrow; `[]` allows nothing).
 */
export const isAllowed = (input: {
  readonly actor: PermissionActor
  readonly restrictions?: ReadonlyArray<Permission> | undefined
  readonly request: PermissionRequest
}): boolean =>
  anyMatches(input.actor.permissions, input.actor, input.request) &&
  (input.restrictions === undefined || anyMatches(input.restrictions, input.actor, input.request))

/** Which resource ids of one (namespace, resource, verb) a caller may touch (spec 5.8 lists). */
export type ResourceScope =
  | { readonly _tag: "None" }
  | { readonly _tag: "All" }
  | { readonly _tag: "Ids"; readonly ids: ReadonlySet<string> }

const none: ResourceScope = { _tag: "None" }
const all: ResourceScope = { _tag: "All" }

const scopeOf = (
  permissions: ReadonlyArray<Permission>,
  subject: PermissionSubject,
  namespace: string,
  resource: string,
  verb: string
): ResourceScope => {
  let ids: Set<string> | undefined
  for (const permission of permissions) {
    if (!scopeMatches(permission, subject, namespace, resource, verb)) continue
    if (permission.resourceIds === undefined) return all
    ids ??= new Set()
    for (const id of permission.resourceIds) ids.add(id)
  }
  return ids === undefined ? none : { _tag: "Ids", ids }
}

const intersect = (left: ResourceScope, right: ResourceScope): ResourceScope => {
  if (left._tag === "None" || right._tag === "All") return left
  if (right._tag === "None" || left._tag === "All") return right
  const ids = new Set([...left.ids].filter((id) => right.ids.has(id)))
  return ids.size === 0 ? none : { _tag: "Ids", ids }
}

/** Who asks, and for which `resource`:`verb` in which `namespace`. */
export interface ScopeQuery {
  readonly actor: PermissionActor
  readonly restrictions?: ReadonlyArray<Permission> | undefined
  readonly namespace: string
  readonly resource: string
  readonly verb: string
}

/**
 * The ids of `resource` in `namespace` the caller may `verb`: `All`, a set of `Ids`, or `None`.
 * Agrees with {@link isAllowed}: an id is in scope iff `isAllowed` with that `resourceId` holds.
 */
export const resourceScope = (input: ScopeQuery): ResourceScope => {
  const { actor, namespace, resource, verb } = input
  const granted = scopeOf(actor.permissions, actor, namespace, resource, verb)
  if (granted._tag === "None" || input.restrictions === undefined) return granted
  return intersect(granted, scopeOf(input.restrictions, actor, namespace, resource, verb))
}

/** True when the caller may `verb` at least one `resource` in `namespace` (list visibility). */
export const canSeeNamespace = (input: ScopeQuery): boolean => resourceScope(input)._tag !== "None"

type Rendered = NonNullable<ReturnType<typeof renderNamespacePattern>>

const namespacesOverlap = (left: Rendered, right: Rendered): boolean => {
  if (left._tag === "Any" || right._tag === "Any") return true
  return (
    (left.subtree && pathMatches(left.path, true, right.path)) ||
    (right.subtree && pathMatches(right.path, true, left.path)) ||
    left.path === right.path
  )
}

const idsOverlap = (left: Permission, right: Permission): boolean =>
  left.resourceIds === undefined ||
  right.resourceIds === undefined ||
  left.resourceIds.some((id) => right.resourceIds!.includes(id))

/**
 * True when some request for `resource`:`verb` could be allowed in some namespace: an actor
 * grant and (when restricted) a restriction that overlap in namespace and ids. For the endpoint
 * gate (403 when false); the handler still checks the concrete namespace and id.
 */
export const hasAnyGrant = (
  actor: PermissionActor & { readonly restrictions?: ReadonlyArray<Permission> | undefined },
  resource: string,
  verb: string
): boolean => {
  const usable = (permissions: ReadonlyArray<Permission>) => {
    const out: Array<readonly [Permission, Rendered]> = []
    for (const permission of permissions) {
      if (!listMatches(permission.resources, resource) || !listMatches(permission.verbs, verb)) continue
      if (permission.resourceIds !== undefined && permission.resourceIds.length === 0) continue
      const rendered = renderNamespacePattern(permission.namespace, actor)
      if (rendered !== undefined) out.push([permission, rendered])
    }
    return out
  }
  const grants = usable(actor.permissions)
  if (actor.restrictions === undefined || grants.length === 0) return grants.length > 0
  const restrictions = usable(actor.restrictions)
  return grants.some(([grant, grantNs]) =>
    restrictions.some(
      ([restriction, restrictionNs]) => idsOverlap(grant, restriction) && namespacesOverlap(grantNs, restrictionNs)
    )
  )
}
