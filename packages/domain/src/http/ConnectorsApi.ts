/** Connector and connector-version endpoints (spec 4.1, 3.2, API-CONVENTIONS "Resources"). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  Connector,
  ConnectorVersion,
  CreateConnector,
  CreateConnectorVersion,
  SetVersionState,
  UpdateConnector,
  VersionState
} from "../Connector.ts"
import { Page } from "../Resource.ts"
import { IntFromString, optionalBody } from "../StrictInput.ts"
import { ConnectorTaskHandle, StartLifecycle } from "../Task.ts"
import { listQuery, permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

const params = { id: Schema.String }
const versionParams = { id: Schema.String, version: IntFromString }

export class ConnectorsApi extends HttpApiGroup.make("connectors")
  .add(
    HttpApiEndpoint.post("create", "/api/v1/connectors", {
      payload: CreateConnector,
      success: Connector.pipe(HttpApiSchema.status(201)),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("connectors", "create"))
      .annotate(OpenApi.Description, "Creates a connector with version 1 in state draft."),
    HttpApiEndpoint.get("list", "/api/v1/connectors", {
      query: {
        ...listQuery,
        state: Schema.optionalKey(VersionState),
        type: Schema.optionalKey(Schema.String)
      },
      success: Page(Connector),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("connectors", "list"))
      .annotate(
        OpenApi.Description,
        "Lists connectors (spec 4.1): state and type are those of each connector's current version."
      ),
    HttpApiEndpoint.get("get", "/api/v1/connectors/:id", { params, success: Connector, error: resourceErrors })
      .annotate(RequiredPermission, permission("connectors", "get"))
      .annotate(OpenApi.Description, "One connector."),
    HttpApiEndpoint.patch("update", "/api/v1/connectors/:id", {
      params,
      payload: UpdateConnector,
      success: Connector,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("connectors", "update"))
      .annotate(OpenApi.Description, "Renames a connector (the only rename route) or replaces its labels/annotations."),
    HttpApiEndpoint.post("createVersion", "/api/v1/connectors/:id/versions", {
      params,
      payload: CreateConnectorVersion,
      success: ConnectorVersion.pipe(HttpApiSchema.status(201)),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("connectors", "update"))
      .annotate(OpenApi.Description, "Adds the next version of a connector in state draft."),
    HttpApiEndpoint.get("listVersions", "/api/v1/connectors/:id/versions", {
      params,
      success: Schema.Struct({ items: Schema.Array(ConnectorVersion) }).annotate({
        identifier: "ConnectorVersionList"
      }),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("connectors", "get"))
      .annotate(OpenApi.Description, "Every version of a connector, newest first."),
    HttpApiEndpoint.get("getVersion", "/api/v1/connectors/:id/versions/:version", {
      params: versionParams,
      success: ConnectorVersion,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("connectors", "get"))
      .annotate(OpenApi.Description, "One version of a connector."),
    HttpApiEndpoint.put("setVersionState", "/api/v1/connectors/:id/versions/:version/_state", {
      params: versionParams,
      payload: SetVersionState,
      success: ConnectorVersion,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("connectors", "update"))
      .annotate(
        OpenApi.Description,
        "Publishes (primary: the previous primary becomes active), demotes to active or archives a version."
      ),
    HttpApiEndpoint.post("disconnectAll", "/api/v1/connectors/:id/_disconnectAll", {
      params,
      payload: optionalBody(StartLifecycle),
      success: ConnectorTaskHandle.pipe(HttpApiSchema.status(202)),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("connectors", "disconnect_all"))
      .annotate(
        OpenApi.Description,
        "Starts a durable disconnect of every live connection of the connector (setup, configured, disabled, disconnecting): one child per connection with the timeout minus a 5-second reserve; when the timeout expires or a child fails, the rest are forced to disconnected and soft-deleted. Answers the task to poll at /api/v1/tasks/{taskId}; 409 operation_in_progress while a disconnect-all or archive of the connector runs. timeoutSeconds defaults to 600."
      ),
    HttpApiEndpoint.post("archive", "/api/v1/connectors/:id/_archive", {
      params,
      payload: optionalBody(StartLifecycle),
      success: ConnectorTaskHandle.pipe(HttpApiSchema.status(202)),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("connectors", "archive"))
      .annotate(
        OpenApi.Description,
        "Starts a durable archive of the connector: draft versions become archived and the primary active (no new connections), then a disconnect-all of its connections (the timeout passed through), then every version archived. Answers the task to poll; 409 operation_in_progress while a disconnect-all or archive of the connector runs."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Connectors") {}
