/**
 * The Connect UI's one API module: a function per public-service endpoint it calls, declared with
 * shared/endpoints.ts (HttpApi group and endpoint name of `PublicApi`; method and path checked at
 * compile time and by connectApi.test.ts; the answer typed by the endpoint's success schema).
 * The plain routes (`/connect/config.json`, `/marketplace/session`) are read with `getChecked`.
 */
import type { PublicApi } from "@svc/domain/http/Apis"
import { makeEndpoints } from "../shared/endpoints.ts"
import { api } from "./common.ts"

const { declared, call } = makeEndpoints<typeof PublicApi>(api)

/** Every endpoint the Connect UI calls (connectApi.test.ts checks each against the declarations). */
export const endpoints = {
  listConnectors: declared("connectors", "list", "GET", "/api/v1/connectors"),
  listConnections: declared("connections", "list", "GET", "/api/v1/connections"),
  initiate: declared("connections", "initiate", "POST", "/api/v1/connections/_initiate"),
  setupProgress: declared("connections", "setupProgress", "GET", "/api/v1/connections/:id/_setup"),
  submitSetupStep: declared("connections", "submitSetupStep", "POST", "/api/v1/connections/:id/_setup"),
  reauthorize: declared("connections", "reauthorize", "POST", "/api/v1/connections/:id/_reauthorize"),
  disconnect: declared("connections", "disconnect", "POST", "/api/v1/connections/:id/_disconnect"),
  listNotifications: declared("notifications", "list", "GET", "/api/v1/notifications"),
  markViewed: declared("notifications", "markViewed", "POST", "/api/v1/notifications/:id/_viewed"),
  getTask: declared("tasks", "get", "GET", "/api/v1/tasks/:taskId")
} as const

const e = endpoints
const id = (value: string) => ({ id: value })

export const connectApi = {
  listConnectors: () => call(e.listConnectors, { query: { limit: "100" } }),
  listConnections: () => call(e.listConnections, { query: { limit: "100" } }),
  initiate: (connectorId: string, returnToUrl: string) => call(e.initiate, { body: { connectorId, returnToUrl } }),
  setupProgress: (connectionId: string) => call(e.setupProgress, { params: id(connectionId) }),
  submitSetupStep: (connectionId: string, stepId: string, values: Readonly<Record<string, unknown>>) =>
    call(e.submitSetupStep, { params: id(connectionId), body: { stepId, values } }),
  reauthorize: (connectionId: string, returnToUrl: string) =>
    call(e.reauthorize, { params: id(connectionId), body: { returnToUrl } }),
  disconnect: (connectionId: string) => call(e.disconnect, { params: id(connectionId) }),
  listNotifications: () => call(e.listNotifications),
  markViewed: (noticeId: string) => call(e.markViewed, { params: id(noticeId) }),
  getTask: (taskId: string) => call(e.getTask, { params: { taskId } })
}
