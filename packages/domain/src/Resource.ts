/**
 * What every resource shares (spec 2.2, API-CONVENTIONS "Resources" and "Lists"): names, the
 * response envelope, namespace filters, ordering, cursors and pages. Pure.
 */
import { Schema, SchemaAST } from "effect"
import { Labels } from "./Labels.ts"
import { isNamespacePath, NamespacePath, pathMatches } from "./PermissionMatcher.ts"
import { IntFromString } from "./StrictInput.ts"

/** spec 2.2: a display name, case-sensitive; 1–63 of `[A-Za-z0-9._-]`, starting alphanumeric. */
export const ResourceName = Schema.String.check(
  Schema.makeFilter((value: string) => /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(value), {
    message: "a name is 1 to 63 characters of letters, digits, '.', '_' or '-', starting with a letter or digit"
  })
)
export type ResourceName = typeof ResourceName.Type

/** The fields every resource response carries (API-CONVENTIONS "Resources"). */
export const envelopeFields = {
  id: Schema.String,
  name: Schema.String,
  namespace: Schema.String,
  labels: Labels,
  annotations: Schema.Record(Schema.String, Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String
}

/** A namespace list filter: one namespace (`root.acme`) or a subtree matcher (`root.acme.**`). */
export interface NamespaceFilter {
  readonly path: string
  readonly subtree: boolean
}

/** Parses a namespace filter; `undefined` when it is neither a path nor `path.**`. */
export const parseNamespaceFilter = (value: string): NamespaceFilter | undefined => {
  const subtree = value.endsWith(".**")
  const path = subtree ? value.slice(0, -3) : value
  return isNamespacePath(path) ? { path, subtree } : undefined
}

/** Query text of a namespace filter. */
export const NamespaceFilterParam = Schema.String.check(
  Schema.makeFilter((value: string) => parseNamespaceFilter(value) !== undefined, {
    message: "expected a namespace path such as root.acme or a subtree matcher such as root.acme.**"
  })
)

/** True when `namespace` passes `filter`. */
export const namespaceFilterMatches = (filter: NamespaceFilter, namespace: string): boolean =>
  pathMatches(filter.path, filter.subtree, namespace)

/** The parent of a namespace path, `undefined` for `root`. */
export const parentNamespace = (path: string): string | undefined => {
  const dot = path.lastIndexOf(".")
  return dot === -1 ? undefined : path.slice(0, dot)
}

/** `root`, then every ancestor down to `path` itself (`root`, `root.a`, `root.a.b`). */
export const namespaceLineage = (path: string): Array<string> => {
  const segments = path.split(".")
  return segments.map((_, i) => segments.slice(0, i + 1).join("."))
}

export { NamespacePath }

/** Page size: default 100, 1–1000 (API-CONVENTIONS "Lists"). */
export const defaultPageSize = 100
export const maxPageSize = 1000

export const Limit = IntFromString.check(
  Schema.makeFilter((n: number) => Number.isInteger(n) && n >= 1 && n <= maxPageSize, {
    message: `limit is an integer from 1 to ${maxPageSize}`
  })
)

/**
 * A list response page: `cursor` is absent on the last page. A named item (`Connection`) names the
 * page (`ConnectionPage`) in the OpenAPI and Swagger documents.
 */
export const Page = <S extends Schema.Top>(item: S) => {
  const page = Schema.Struct({ items: Schema.Array(item), cursor: Schema.optionalKey(Schema.String) })
  const name = SchemaAST.resolveIdentifier(item.ast)
  return name === undefined ? page : page.annotate({ identifier: `${name}Page` })
}

/** A sort order `<field> ASC|DESC` over one of `fields` (API-CONVENTIONS "Lists"). */
export interface Order {
  readonly field: string
  readonly direction: "ASC" | "DESC"
}

/** Parses `<field> ASC|DESC` (direction optional, default ASC, case-insensitive). */
export const parseOrder = (text: string, fields: ReadonlyArray<string>): Order | string => {
  const parts = text.trim().split(/\s+/)
  const field = parts[0] ?? ""
  const direction = (parts[1] ?? "ASC").toUpperCase()
  if (parts.length > 2 || (direction !== "ASC" && direction !== "DESC")) {
    return "order is '<field> ASC' or '<field> DESC'"
  }
  if (!fields.includes(field)) return `order field must be one of ${fields.join(", ")}`
  return { field, direction }
}

/** Sort fields every list accepts (here, not in `http/Endpoints.ts`, so the `cli` needs no endpoint declarations for its flags). */
export const orderFields = ["createdAt", "updatedAt", "name", "id"] as const

/** Order query parameter over the given fields. */
export const OrderParam = (fields: ReadonlyArray<string>) =>
  Schema.String.check(
    Schema.makeFilter((value: string) => {
      const parsed = parseOrder(value, fields)
      return typeof parsed === "string" ? parsed : true
    })
  )

/**
 * The state a list continues from: the filters of the first call (a cursor carries them, spec
 * "Lists"), the order, and the sort key and id of the last item returned.
 */
export const CursorState = Schema.Struct({
  filters: Schema.Record(Schema.String, Schema.String),
  order: Schema.Struct({ field: Schema.String, direction: Schema.Literals(["ASC", "DESC"]) }),
  after: Schema.Struct({ value: Schema.NullOr(Schema.String), id: Schema.String })
})
export type CursorState = typeof CursorState.Type

const base64url = {
  encode: (text: string): string => {
    const bytes = new TextEncoder().encode(text)
    let binary = ""
    for (const byte of bytes) binary += String.fromCharCode(byte)
    return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")
  },
  decode: (text: string): string | undefined => {
    if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined
    try {
      const binary = atob(text.replaceAll("-", "+").replaceAll("_", "/"))
      return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)))
    } catch {
      return undefined
    }
  }
}

/** Opaque cursor text of a list position. */
export const encodeCursor = (state: CursorState): string => base64url.encode(JSON.stringify(state))

const decodeState = Schema.decodeUnknownOption(CursorState)

/** The list position of a cursor, `undefined` when it is not one this service issued. */
export const decodeCursor = (text: string): CursorState | undefined => {
  const json = base64url.decode(text)
  if (json === undefined) return undefined
  try {
    const state = decodeState(JSON.parse(json))
    return state._tag === "Some" ? state.value : undefined
  } catch {
    return undefined
  }
}

/** The resource types of spec 2.1 with their URL segment, permission resource and `<rt>`. */
export const resourceTypes = {
  namespaces: { segment: "namespaces", permission: "namespaces", rt: "ns" },
  actors: { segment: "actors", permission: "actors", rt: "act" },
  connectors: { segment: "connectors", permission: "connectors", rt: "cxr" },
  connections: { segment: "connections", permission: "connections", rt: "cxn" },
  keys: { segment: "keys", permission: "keys", rt: "key" },
  rate_limits: { segment: "rate-limits", permission: "rate_limits", rt: "rl" },
  webhooks: { segment: "webhooks", permission: "webhooks", rt: "wh" }
} as const
export type ResourceType = keyof typeof resourceTypes
export const ResourceType = Schema.Literals([
  "namespaces",
  "actors",
  "connectors",
  "connections",
  "keys",
  "rate_limits",
  "webhooks"
])
