/** Connections (spec 2.7, 3.1): an authorised instance of a connector version in a namespace. */
import { Schema } from "effect"
import { ConnectionId, ConnectorId } from "./Ids.ts"
import { UserAnnotations, UserLabels } from "./Labels.ts"
import { NamespacePath } from "./PermissionMatcher.ts"
import { envelopeFields, ResourceName } from "./Resource.ts"

/** spec 3.1: connection states. */
export const ConnectionState = Schema.Literals(["setup", "configured", "disabled", "disconnecting", "disconnected"])
export type ConnectionState = typeof ConnectionState.Type

/** spec 2.7: health states. */
export const HealthState = Schema.Literals(["healthy", "unhealthy"])
export type HealthState = typeof HealthState.Type

/** Configuration collected by setup steps. */
export const Configuration = Schema.Record(Schema.String, Schema.Unknown)

/** A connection as returned. */
export const Connection = Schema.Struct({
  ...envelopeFields,
  id: ConnectionId,
  connectorId: ConnectorId,
  connectorVersion: Schema.Number,
  state: ConnectionState,
  healthState: HealthState,
  setupStepId: Schema.NullOr(Schema.String),
  configuration: Configuration,
  /** OAuth2 connections: the scopes the provider granted (spec 5.9). */
  grantedScopes: Schema.optionalKey(Schema.Array(Schema.String))
}).annotate({ identifier: "Connection" })
export type Connection = typeof Connection.Type

/**
 * `POST /api/v1/connections` (server-side creation): on the connector's primary version, in the
 * connector's namespace or a descendant (default: the connector's namespace).
 */
export const CreateConnection = Schema.Struct({
  connectorId: Schema.String,
  namespace: Schema.optionalKey(NamespacePath),
  name: Schema.optionalKey(ResourceName),
  configuration: Schema.optionalKey(Configuration),
  credentials: Schema.optionalKey(Schema.Unknown),
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations)
}).annotate({ identifier: "CreateConnection" })
export type CreateConnection = typeof CreateConnection.Type

/** `PATCH /api/v1/connections/{id}` (spec 4.1): `labels` replaces the user set; system labels survive. */
export const UpdateConnection = Schema.Struct({
  name: Schema.optionalKey(ResourceName),
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations)
}).annotate({ identifier: "UpdateConnection" })
export type UpdateConnection = typeof UpdateConnection.Type

/**
 * `PUT /api/v1/connections/{id}/credentials`: replaces the connection's credentials (API key,
 * basic, OAuth2 client credentials) and keeps its id.
 */
export const ReplaceCredentials = Schema.Struct({ credentials: Schema.Unknown }).annotate({
  identifier: "ReplaceCredentials"
})
export type ReplaceCredentials = typeof ReplaceCredentials.Type

/** A probe outcome (spec 4.2, API-CONVENTIONS "Proxy"). */
export const ProbeOutcome = Schema.Literals(["success", "failure"])
export type ProbeOutcome = typeof ProbeOutcome.Type

/** `GET /api/v1/connectors/{connector}/probes/{probe}?connectionId=`: one run of a probe. */
export const ProbeResult = Schema.Struct({
  probeId: Schema.String,
  connectionId: ConnectionId,
  outcome: ProbeOutcome,
  statusCode: Schema.optionalKey(Schema.Number),
  durationMs: Schema.Number,
  error: Schema.optionalKey(Schema.String),
  checkedAt: Schema.String
}).annotate({ identifier: "ProbeResult" })
export type ProbeResult = typeof ProbeResult.Type
