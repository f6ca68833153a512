/**
 * The HttpApi of each service (spec 1). The api and admin-api declarations are the source of
 * the committed Swagger 2.0 documents (`npm run swagger`).
 */
import { HttpApi, OpenApi } from "effect/http-api"
import { ActorsApi } from "./ActorsApi.ts"
import { AuthApi } from "./AuthApi.ts"
import { ConnectionsApi } from "./ConnectionsApi.ts"
import { ConnectorsApi } from "./ConnectorsApi.ts"
import { KeysApi } from "./KeysApi.ts"
import {
  ActorsMetadataApi,
  ConnectionsMetadataApi,
  ConnectorsMetadataApi,
  KeysMetadataApi,
  NamespacesMetadataApi,
  RateLimitsMetadataApi,
  WebhooksMetadataApi
} from "./MetadataApi.ts"
import { MetricsApi } from "./MetricsApi.ts"
import { NamespacesApi } from "./NamespacesApi.ts"
import { NotificationsApi } from "./NotificationsApi.ts"
import { ProbesApi } from "./ProbesApi.ts"
import { ProxyApi } from "./ProxyApi.ts"
import { RateLimitsApi } from "./RateLimitsApi.ts"
import { RequestEventsApi } from "./RequestEventsApi.ts"
import { SearchApi } from "./SearchApi.ts"
import { SystemApi } from "./SystemApi.ts"
import { TasksApi } from "./TasksApi.ts"
import { WebhooksApi } from "./WebhooksApi.ts"

/**
 * Client input is decoded reporting every problem; unknown body keys are rejected so a typo in a
 * field name is a 400 instead of a silently ignored value.
 */
const strictPayload = { errors: "all", onExcessProperty: "error" } as const
const allErrors = { errors: "all" } as const
const strictQuery = { errors: "all", onExcessProperty: "error" } as const

/** The resource groups both the api and the admin-api serve. */
const resourceGroups = [
  NamespacesApi,
  ActorsApi,
  ConnectorsApi,
  ConnectionsApi,
  ProbesApi,
  ProxyApi,
  KeysApi,
  RateLimitsApi,
  NotificationsApi,
  RequestEventsApi,
  MetricsApi,
  TasksApi,
  WebhooksApi
] as const
const metadataGroups = [
  NamespacesMetadataApi,
  ActorsMetadataApi,
  ConnectorsMetadataApi,
  ConnectionsMetadataApi,
  KeysMetadataApi,
  RateLimitsMetadataApi,
  WebhooksMetadataApi
] as const

/** Application API (service id `api`, default port 8081). */
export class ApiV1 extends HttpApi.make("api")
  .add(SystemApi)
  .add(AuthApi)
  .add(...resourceGroups)
  .add(...metadataGroups)
  .annotate(OpenApi.Title, "svc application API")
  .annotate(OpenApi.Version, "v1")
  .annotate(HttpApi.PayloadParseOptions, strictPayload)
  .annotate(HttpApi.QueryParseOptions, strictQuery)
  .annotate(HttpApi.ParamsParseOptions, allErrors) {}

/** Admin API (service id `admin-api`, default port 8082, TLS). */
export class AdminApiV1 extends HttpApi.make("admin-api")
  .add(SystemApi)
  .add(AuthApi)
  .add(...resourceGroups)
  .add(...metadataGroups)
  .add(SearchApi)
  .annotate(OpenApi.Title, "svc admin API")
  .annotate(OpenApi.Version, "v1")
  .annotate(HttpApi.PayloadParseOptions, strictPayload)
  .annotate(HttpApi.QueryParseOptions, strictQuery)
  .annotate(HttpApi.ParamsParseOptions, allErrors) {}

/**
 * Browser-facing service (service id `public`, default port 8080): health, and for browser
 * sessions (or bearer tokens for `public`) the calls a marketplace front end makes: who am I,
 * connectors, connection setup and notifications. The OAuth2 redirect/callback and session
 * routes are plain routes beside it.
 */
export class PublicApi extends HttpApi.make("public")
  .add(SystemApi)
  .add(AuthApi)
  .add(ConnectorsApi, ConnectionsApi, NotificationsApi, TasksApi)
  .annotate(OpenApi.Title, "svc public service")
  .annotate(HttpApi.PayloadParseOptions, strictPayload)
  .annotate(HttpApi.QueryParseOptions, strictQuery)
  .annotate(HttpApi.ParamsParseOptions, allErrors) {}

/** Worker health endpoint (service id `worker`). */
export class WorkerApi extends HttpApi.make("worker").add(SystemApi).annotate(OpenApi.Title, "svc worker") {}
