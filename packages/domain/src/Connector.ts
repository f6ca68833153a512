/**
 * Connectors and their versions (spec 2.1, 3.2): one logical connector (one name, one label set)
 * with integer versions in states `draft`, `primary`, `active`, `archived`.
 */
import { Schema } from "effect"
import { ConnectorDefinition } from "./ConnectorDefinition.ts"
import { ConnectorId } from "./Ids.ts"
import { UserAnnotations, UserLabels } from "./Labels.ts"
import { NamespacePath } from "./PermissionMatcher.ts"
import { envelopeFields, ResourceName } from "./Resource.ts"

/** spec 3.2: version states. */
export const VersionState = Schema.Literals(["draft", "primary", "active", "archived"])
export type VersionState = typeof VersionState.Type

/**
 * A connector as returned. `version` and `state` describe its current version: the primary one,
 * else the newest active, else the newest draft, else the newest archived; `type` is that
 * version's definition type; `displayName`, `description` and `logoUrl` are that definition's
 * `display_name`, `description` and `logo_url` when it sets them (what the Connect UI shows).
 */
export const Connector = Schema.Struct({
  ...envelopeFields,
  id: ConnectorId,
  version: Schema.Number,
  state: VersionState,
  type: Schema.String,
  displayName: Schema.optionalKey(Schema.String),
  description: Schema.optionalKey(Schema.String),
  logoUrl: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "Connector" })
export type Connector = typeof Connector.Type

/** One version of a connector. */
export const ConnectorVersion = Schema.Struct({
  connectorId: ConnectorId,
  version: Schema.Number,
  state: VersionState,
  definition: ConnectorDefinition,
  createdAt: Schema.String,
  updatedAt: Schema.String
}).annotate({ identifier: "ConnectorVersion" })
export type ConnectorVersion = typeof ConnectorVersion.Type

/**
 * A definition document as sent: an object, or a string of YAML or JSON. The server validates it
 * fully (docs/connector-definitions.md) and answers 400 `invalid_definition` naming each bad field.
 */
export const DefinitionDocument = Schema.Union([Schema.String, Schema.Record(Schema.String, Schema.Unknown)])
  .annotate({
    description:
      "The connector definition document (docs/connector-definitions.md): an object, or a string holding it as YAML or JSON."
  })
  .annotate({ identifier: "DefinitionDocument" })
export type DefinitionDocument = typeof DefinitionDocument.Type

/** `POST /api/v1/connectors`: creates the connector with version 1 as `draft`. */
export const CreateConnector = Schema.Struct({
  namespace: NamespacePath,
  name: Schema.optionalKey(ResourceName),
  definition: DefinitionDocument,
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations)
}).annotate({ identifier: "CreateConnector" })
export type CreateConnector = typeof CreateConnector.Type

/** `PATCH /api/v1/connectors/{id}`: the only way to rename a connector (spec 2.2 rule 6). */
export const UpdateConnector = Schema.Struct({
  name: Schema.optionalKey(ResourceName),
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations)
}).annotate({ identifier: "UpdateConnector" })
export type UpdateConnector = typeof UpdateConnector.Type

/** `POST /api/v1/connectors/{id}/versions`: a new `draft` version (no name: spec 2.2 rule 6). */
export const CreateConnectorVersion = Schema.Struct({ definition: DefinitionDocument }).annotate({
  identifier: "CreateConnectorVersion"
})
export type CreateConnectorVersion = typeof CreateConnectorVersion.Type

/** `PUT /api/v1/connectors/{id}/versions/{version}/_state`. */
export const SetVersionState = Schema.Struct({ state: Schema.Literals(["primary", "active", "archived"]) }).annotate({
  identifier: "SetVersionState"
})
export type SetVersionState = typeof SetVersionState.Type
