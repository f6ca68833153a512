/**
 * The admin UI's one API module: a function per admin-api endpoint it calls, and no API path
 * anywhere else. Each call is declared by its HttpApi group and endpoint name
 * (`packages/domain/src/http`): its method and path are checked against that declaration at
 * compile time (`declared` does not type-check otherwise) and again by adminApi.test.ts, and its
 * answer's type is the endpoint's success schema's type, not one chosen at the call site (the
 * domain's response schemas keep the JSON shapes: strings for times, plain objects). The JSON
 * boundary of shared/api.ts is the one place a body becomes that type.
 */
import type { AdminApiV1 } from "@svc/domain/http/Apis"
import { makeApi } from "../shared/api.ts"

const http = makeApi("svc_admin_xsrf")

type Groups = (typeof AdminApiV1)["groups"]
type EndpointOf<G extends keyof Groups, N extends keyof Groups[G]["endpoints"]> = Groups[G]["endpoints"][N]
type MethodOf<E> = E extends { readonly method: infer M } ? M : never
type PathOf<E> = E extends { readonly path: infer P } ? P : never
type SuccessSchema<E> = E extends { readonly "~Success": infer S } ? (S extends ReadonlyArray<infer A> ? A : S) : never
/** What an endpoint answers: its success schema's type. */
export type Answer<G extends keyof Groups, N extends keyof Groups[G]["endpoints"]> =
  SuccessSchema<EndpointOf<G, N>> extends { readonly Type: infer A } ? A : never

/** One declared call: group, endpoint name, and the method and path the declaration has. */
export interface Declared<G extends keyof Groups, N extends keyof Groups[G]["endpoints"]> {
  readonly group: G
  readonly name: N
  readonly method: MethodOf<EndpointOf<G, N>>
  readonly path: PathOf<EndpointOf<G, N>>
}

const declared = <G extends keyof Groups, N extends keyof Groups[G]["endpoints"] & string>(
  group: G,
  name: N,
  method: MethodOf<EndpointOf<G, N>>,
  path: PathOf<EndpointOf<G, N>>
): Declared<G, N> => ({ group, name, method, path })

/** Every endpoint the admin UI calls (adminApi.test.ts checks each against the declarations). */
export const endpoints = {
  listNamespaces: declared("namespaces", "list", "GET", "/api/v1/namespaces"),
  createNamespace: declared("namespaces", "create", "POST", "/api/v1/namespaces"),
  listActors: declared("actors", "list", "GET", "/api/v1/actors"),
  createActor: declared("actors", "create", "POST", "/api/v1/actors"),
  listConnectors: declared("connectors", "list", "GET", "/api/v1/connectors"),
  createConnector: declared("connectors", "create", "POST", "/api/v1/connectors"),
  listVersions: declared("connectors", "listVersions", "GET", "/api/v1/connectors/:id/versions"),
  getVersion: declared("connectors", "getVersion", "GET", "/api/v1/connectors/:id/versions/:version"),
  runProbe: declared("probes", "run", "GET", "/api/v1/connectors/:connector/probes/:probe"),
  createVersion: declared("connectors", "createVersion", "POST", "/api/v1/connectors/:id/versions"),
  setVersionState: declared("connectors", "setVersionState", "PUT", "/api/v1/connectors/:id/versions/:version/_state"),
  disconnectAll: declared("connectors", "disconnectAll", "POST", "/api/v1/connectors/:id/_disconnectAll"),
  archive: declared("connectors", "archive", "POST", "/api/v1/connectors/:id/_archive"),
  listConnections: declared("connections", "list", "GET", "/api/v1/connections"),
  getConnection: declared("connections", "get", "GET", "/api/v1/connections/:id"),
  migrateVersion: declared("connections", "migrateVersion", "POST", "/api/v1/connections/:id/_migrate_version"),
  putLabel: declared("connectionsMetadata", "putLabel", "PUT", "/api/v1/connections/:id/labels/:key"),
  deleteLabel: declared("connectionsMetadata", "deleteLabel", "DELETE", "/api/v1/connections/:id/labels/:key"),
  putAnnotation: declared("connectionsMetadata", "putAnnotation", "PUT", "/api/v1/connections/:id/annotations/:key"),
  deleteAnnotation: declared(
    "connectionsMetadata",
    "deleteAnnotation",
    "DELETE",
    "/api/v1/connections/:id/annotations/:key"
  ),
  listRateLimits: declared("rateLimits", "list", "GET", "/api/v1/rate-limits"),
  createRateLimit: declared("rateLimits", "create", "POST", "/api/v1/rate-limits"),
  updateRateLimit: declared("rateLimits", "update", "PATCH", "/api/v1/rate-limits/:id"),
  deleteRateLimit: declared("rateLimits", "delete", "DELETE", "/api/v1/rate-limits/:id"),
  listRequestEvents: declared("requestEvents", "list", "GET", "/api/v1/metrics/request-events"),
  getRecording: declared("requestEvents", "recording", "GET", "/api/v1/metrics/request-events/:id/recording"),
  queryMetrics: declared("metrics", "query", "POST", "/api/v1/metrics/query"),
  getTask: declared("tasks", "get", "GET", "/api/v1/tasks/:taskId"),
  searchResources: declared("search", "resources", "GET", "/api/v1/search/resources")
} as const

type Query = Readonly<Record<string, string | undefined>>

/** `path` with each `:name` segment replaced by `params[name]`, URL-encoded. */
export const fill = (path: string, params: Readonly<Record<string, string | number>>): string =>
  path.replace(/:([A-Za-z]+)/g, (_, name: string) => {
    const value = params[name]
    if (value === undefined) throw new Error(`no value for :${name} of ${path}`)
    return encodeURIComponent(String(value))
  })

const call = <G extends keyof Groups, N extends keyof Groups[G]["endpoints"]>(
  endpoint: Declared<G, N>,
  options: {
    readonly params?: Readonly<Record<string, string | number>>
    readonly query?: Query
    readonly body?: unknown
  } = {}
): Promise<Answer<G, N>> => {
  const path = fill(endpoint.path as string, options.params ?? {})
  const method = endpoint.method as string
  return method === "GET"
    ? http.get<Answer<G, N>>(path, options.query)
    : http.send<Answer<G, N>>(method as "POST" | "PUT" | "PATCH" | "DELETE", path, options.body ?? {})
}

const e = endpoints
const id = (value: string) => ({ id: value })

export const adminApi = {
  listNamespaces: (query: Query) => call(e.listNamespaces, { query }),
  createNamespace: (path: string) => call(e.createNamespace, { body: { path } }),
  listActors: (query: Query) => call(e.listActors, { query }),
  createActor: (body: unknown) => call(e.createActor, { body }),
  listConnectors: (query: Query) => call(e.listConnectors, { query }),
  createConnector: (body: { namespace: string; name?: string; definition: string }) =>
    call(e.createConnector, { body }),
  listVersions: (connectorId: string) => call(e.listVersions, { params: id(connectorId) }),
  getVersion: (connectorId: string, version: number) => call(e.getVersion, { params: { id: connectorId, version } }),
  runProbe: (connectorId: string, probeId: string, connectionId: string) =>
    call(e.runProbe, { params: { connector: connectorId, probe: probeId }, query: { connectionId } }),
  createVersion: (connectorId: string, definition: string) =>
    call(e.createVersion, { params: id(connectorId), body: { definition } }),
  publish: (connectorId: string, version: number) =>
    call(e.setVersionState, { params: { id: connectorId, version }, body: { state: "primary" } }),
  disconnectAll: (connectorId: string) => call(e.disconnectAll, { params: id(connectorId) }),
  archive: (connectorId: string) => call(e.archive, { params: id(connectorId) }),
  listConnections: (query: Query) => call(e.listConnections, { query }),
  getConnection: (connectionId: string) => call(e.getConnection, { params: id(connectionId) }),
  migrateVersion: (connectionId: string, targetVersion: number) =>
    call(e.migrateVersion, {
      params: id(connectionId),
      body: { target_version: targetVersion, timeout_seconds: 300 }
    }),
  setMetadata: (kind: "labels" | "annotations", connectionId: string, key: string, value: string) =>
    call(kind === "labels" ? e.putLabel : e.putAnnotation, { params: { id: connectionId, key }, body: { value } }),
  removeMetadata: (kind: "labels" | "annotations", connectionId: string, key: string) =>
    call(kind === "labels" ? e.deleteLabel : e.deleteAnnotation, { params: { id: connectionId, key } }),
  listRateLimits: (query: Query) => call(e.listRateLimits, { query }),
  createRateLimit: (body: unknown) => call(e.createRateLimit, { body }),
  updateRateLimit: (ruleId: string, body: unknown) => call(e.updateRateLimit, { params: id(ruleId), body }),
  deleteRateLimit: (ruleId: string) => call(e.deleteRateLimit, { params: id(ruleId) }),
  listRequestEvents: (query: Query) => call(e.listRequestEvents, { query }),
  getRecording: (eventId: string) => call(e.getRecording, { params: id(eventId) }),
  queryMetrics: (body: unknown) => call(e.queryMetrics, { body }),
  getTask: (taskId: string) => call(e.getTask, { params: { taskId } }),
  searchResources: (query: Query) => call(e.searchResources, { query })
}
