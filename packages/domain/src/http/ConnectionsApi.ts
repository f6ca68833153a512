/** Connection endpoints (spec 2.7, 4.1, API-CONVENTIONS "Resources"). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Connection, ConnectionState, CreateConnection, ReplaceCredentials, UpdateConnection } from "../Connection.ts"
import {
  DisconnectConnection,
  InitiateConnection,
  Reauthorize,
  SetupProgress,
  SubmitSetupStep
} from "../ConnectionSetup.ts"
import { BadGateway, GatewayTimeout, ServiceUnavailable } from "../Errors.ts"
import { MigrateVersion, MigrationTaskHandle } from "../Migration.ts"
import { Page } from "../Resource.ts"
import { optionalBody } from "../StrictInput.ts"
import { ConnectionTaskHandle } from "../Task.ts"
import { listQuery, permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

const params = { id: Schema.String }

export class ConnectionsApi extends HttpApiGroup.make("connections")
  .add(
    HttpApiEndpoint.post("create", "/api/v1/connections", {
      payload: CreateConnection,
      success: Connection.pipe(HttpApiSchema.status(201)),
      error: [...resourceErrors, BadGateway, GatewayTimeout, ServiceUnavailable]
    })
      .annotate(RequiredPermission, permission("connections", "create"))
      .annotate(
        OpenApi.Description,
        "Creates a connection server-side on the connector's primary version, in the connector's namespace or a descendant."
      ),
    HttpApiEndpoint.get("list", "/api/v1/connections", {
      query: {
        ...listQuery,
        state: Schema.optionalKey(ConnectionState),
        connectorId: Schema.optionalKey(Schema.String)
      },
      success: Page(Connection),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("connections", "list"))
      .annotate(OpenApi.Description, "Lists connections the caller may see (spec 4.1)."),
    HttpApiEndpoint.get("get", "/api/v1/connections/:id", { params, success: Connection, error: resourceErrors })
      .annotate(RequiredPermission, permission("connections", "get"))
      .annotate(OpenApi.Description, "One connection."),
    HttpApiEndpoint.patch("update", "/api/v1/connections/:id", {
      params,
      payload: UpdateConnection,
      success: Connection,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("connections", "update"))
      .annotate(
        OpenApi.Description,
        "Renames a connection and/or replaces its user labels (system labels survive) or annotations."
      ),
    HttpApiEndpoint.put("replaceCredentials", "/api/v1/connections/:id/credentials", {
      params,
      payload: ReplaceCredentials,
      success: Connection,
      error: [...resourceErrors, BadGateway, GatewayTimeout, ServiceUnavailable]
    })
      .annotate(RequiredPermission, permission("connections", "update"))
      .annotate(
        OpenApi.Description,
        "Rotates a connection's credentials (api_key, basic, OAuth2 client credentials) without changing its id; client-credentials connections fetch a new token first. Credentials are never returned."
      ),
    HttpApiEndpoint.post("initiate", "/api/v1/connections/_initiate", {
      payload: InitiateConnection,
      success: SetupProgress.pipe(HttpApiSchema.status(201)),
      error: [...resourceErrors, BadGateway, GatewayTimeout, ServiceUnavailable]
    })
      .annotate(RequiredPermission, permission("connections", "create"))
      .annotate(
        OpenApi.Description,
        "Starts interactive setup (spec 4.1): creates the connection in state setup and answers its next step: a form (preconnect, credentials or configure) or a redirect URL that sends the browser to the OAuth2 provider. Without intoNamespace the connector's namespace is used, else the single child namespace where the caller may create connections."
      ),
    HttpApiEndpoint.get("setupProgress", "/api/v1/connections/:id/_setup", {
      params,
      success: SetupProgress,
      error: [...resourceErrors, BadGateway, GatewayTimeout, ServiceUnavailable]
    })
      .annotate(RequiredPermission, permission("connections", "get"))
      .annotate(OpenApi.Description, "The step a connection in setup stands at (setupStepId) and what to do next."),
    HttpApiEndpoint.post("submitSetupStep", "/api/v1/connections/:id/_setup", {
      params,
      payload: SubmitSetupStep,
      success: SetupProgress,
      error: [...resourceErrors, BadGateway, GatewayTimeout, ServiceUnavailable]
    })
      .annotate(RequiredPermission, permission("connections", "update"))
      .annotate(
        OpenApi.Description,
        "Submits the values of the current form step; the connection advances to its next step, runs its verify probes after the last one and becomes configured. On a configured or disabled connection, takes the preconnect values _reauthorize asked for and continues the re-authentication."
      ),
    HttpApiEndpoint.post("reauthorize", "/api/v1/connections/:id/_reauthorize", {
      params,
      payload: optionalBody(Reauthorize),
      success: SetupProgress,
      error: [...resourceErrors, BadGateway, GatewayTimeout, ServiceUnavailable]
    })
      .annotate(RequiredPermission, permission("connections", "update"))
      .annotate(
        OpenApi.Description,
        "Re-authenticates a configured connection (the action of a re-authentication notification). When its version requires a preconnect value the connection lacks (spec 4.3 rule 4), answers that preconnect form, to submit with POST _setup. Then an OAuth2 authorization-code connection gets a redirect URL to the provider; any other auth method runs its verify probes and becomes healthy with the notice resolved. A client-credentials connection missing a scope its version requires first asks the token endpoint for a token with those scopes (409 reauthorization_failed when it is refused). The connection keeps working with its current credentials throughout. 400 reauthorization_not_supported when a connection without a browser step has nothing to re-authenticate."
      ),
    HttpApiEndpoint.post("disconnect", "/api/v1/connections/:id/_disconnect", {
      params,
      payload: optionalBody(DisconnectConnection),
      success: ConnectionTaskHandle.pipe(HttpApiSchema.status(202)),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("connections", "disconnect"))
      .annotate(
        OpenApi.Description,
        "Starts a durable disconnect of the connection and answers the task to poll at /api/v1/tasks/{taskId}: it revokes the OAuth2 tokens at the provider (RFC 7009, when the connector names a revocation endpoint; a failed revocation is logged and does not stop the disconnect), deletes the credentials and soft-deletes the connection. When timeoutSeconds (default 600) passes first, the connection is forced to disconnected. 409 operation_in_progress while a disconnect of it runs."
      ),
    HttpApiEndpoint.post("migrateVersion", "/api/v1/connections/:id/_migrate_version", {
      params,
      payload: MigrateVersion,
      success: MigrationTaskHandle.pipe(HttpApiSchema.status(202)),
      error: [...resourceErrors, ServiceUnavailable]
    })
      .annotate(RequiredPermission, permission("connections", "migrate"))
      .annotate(
        OpenApi.Description,
        "Starts a durable migration of the connection to another version of its connector (spec 4.3) and answers the task to poll at /api/v1/tasks/{taskId}: the hooks of every version crossed run in order in the hook sandbox (upward vN.up, downward vN.down), then the version, configuration, labels, annotations, setup and health state and notifications are written in one transaction, then the target's enabled probes run once. 400 migration_noop (same version), migration_wrong_connector, migration_target_not_migratable (draft or archived target), invalid_timeout; 409 migration_in_progress while a migration of the connection runs."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Connections") {}
