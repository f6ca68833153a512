/** Connection endpoints (spec 2.7, 4.1, API-CONVENTIONS "Resources"). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Connection, ConnectionState, CreateConnection, ReplaceCredentials, UpdateConnection } from "../Connection.ts"
import { BadGateway, GatewayTimeout } from "../Errors.ts"
import { Page } from "../Resource.ts"
import { listQuery, permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

const params = { id: Schema.String }

export class ConnectionsApi extends HttpApiGroup.make("connections")
  .add(
    HttpApiEndpoint.post("create", "/api/v1/connections", {
      payload: CreateConnection,
      success: Connection.pipe(HttpApiSchema.status(201)),
      error: [...resourceErrors, BadGateway, GatewayTimeout]
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
      error: [...resourceErrors, BadGateway, GatewayTimeout]
    })
      .annotate(RequiredPermission, permission("connections", "update"))
      .annotate(
        OpenApi.Description,
        "Rotates a connection's credentials (api_key, basic, OAuth2 client credentials) without changing its id; client-credentials connections fetch a new token first. Credentials are never returned."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Connections") {}
