/**
 * The admin UI's one API module: a function per admin-api endpoint it calls, and no API path
 * anywhere else. Calls are declared with shared/endpoints.ts (HttpApi group and endpoint name;
 * method and path checked at compile time and by adminApi.test.ts; the answer typed by the
 * endpoint's success schema).
 */
import type { AdminApiV1 } from "@svc/domain/http/Apis"
import { makeApi } from "../shared/api.ts"
import { makeEndpoints } from "../shared/endpoints.ts"

const http = makeApi("svc_admin_xsrf")

const { declared, call } = makeEndpoints<typeof AdminApiV1>(http)

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
  searchResources: declared("search", "resources", "GET", "/api/v1/search/resources"),
  listWebhooks: declared("webhooks", "list", "GET", "/api/v1/webhooks"),
  createWebhook: declared("webhooks", "create", "POST", "/api/v1/webhooks"),
  testWebhook: declared("webhooks", "test", "POST", "/api/v1/webhooks/:id/_test"),
  listDeliveries: declared("webhooks", "deliveries", "GET", "/api/v1/webhooks/:id/deliveries"),
  redeliver: declared("webhooks", "redeliver", "POST", "/api/v1/webhooks/:id/deliveries/:deliveryId/_redeliver")
} as const

type Query = Readonly<Record<string, string | undefined>>

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
  searchResources: (query: Query) => call(e.searchResources, { query }),
  listWebhooks: (query: Query) => call(e.listWebhooks, { query }),
  createWebhook: (body: unknown) => call(e.createWebhook, { body }),
  testWebhook: (webhookId: string) => call(e.testWebhook, { params: id(webhookId) }),
  listDeliveries: (webhookId: string, query: Query) => call(e.listDeliveries, { params: id(webhookId), query }),
  redeliver: (webhookId: string, deliveryId: string) => call(e.redeliver, { params: { id: webhookId, deliveryId } })
}
