/**
 * Row schemas of the resource tables (camelCase through the client's name transforms). Connector
 * and connection ids are decoded to their branded types here, where rows enter the program.
 */
import { Permission } from "@svc/domain/Auth"
import { ConnectionId, ConnectorId } from "@svc/domain/Ids"
import { Schema } from "effect"

const StringMap = Schema.Record(Schema.String, Schema.String)

/** Columns every resource table has. */
export const envelopeRowFields = {
  namespace: Schema.String,
  name: Schema.String,
  labels: StringMap,
  annotations: StringMap,
  createdAt: Schema.DateTimeUtcFromDate,
  updatedAt: Schema.DateTimeUtcFromDate
}

/** A row of `namespaces`. */
export const NamespaceRow = Schema.Struct({ path: Schema.String, ...envelopeRowFields })
export type NamespaceRow = typeof NamespaceRow.Type

/** A row of `actors` as the resource API reads it. */
export const ActorResourceRow = Schema.Struct({
  id: Schema.String,
  ...envelopeRowFields,
  externalId: Schema.String,
  permissions: Schema.Array(Permission),
  source: Schema.Literals(["config", "api"])
})
export type ActorResourceRow = typeof ActorResourceRow.Type

/** A row of `connectors`: `state`, `version` and `type` describe the current version. */
export const ConnectorRow = Schema.Struct({
  id: ConnectorId,
  ...envelopeRowFields,
  state: Schema.Literals(["draft", "primary", "active", "archived"]),
  version: Schema.Number,
  type: Schema.String
})
export type ConnectorRow = typeof ConnectorRow.Type

/** A row of `connector_versions`; the definition is decoded by the caller. */
export const ConnectorVersionRow = Schema.Struct({
  connectorId: ConnectorId,
  version: Schema.Number,
  state: Schema.Literals(["draft", "primary", "active", "archived"]),
  definition: Schema.Unknown,
  createdAt: Schema.DateTimeUtcFromDate,
  updatedAt: Schema.DateTimeUtcFromDate
})
export type ConnectorVersionRow = typeof ConnectorVersionRow.Type

/** A row of `connections`. */
export const ConnectionRow = Schema.Struct({
  id: ConnectionId,
  ...envelopeRowFields,
  connectorId: ConnectorId,
  connectorVersion: Schema.Number,
  state: Schema.Literals(["setup", "configured", "disabled", "disconnecting", "disconnected"]),
  healthState: Schema.Literals(["healthy", "unhealthy"]),
  setupStepId: Schema.NullOr(Schema.String),
  /** Ciphertexts (envelope encryption); never plaintext. */
  configurationEnc: Schema.NullOr(Schema.String),
  credentialsEnc: Schema.NullOr(Schema.String),
  /** Plaintext configuration an earlier release stored; the re-encryption sweep encrypts and clears it. */
  legacyConfiguration: Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown)),
  /** OAuth2: the scopes the provider granted. */
  grantedScopes: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String))),
  /** OAuth2: when the background sweep refreshes the token. */
  tokenRefreshDueAt: Schema.optionalKey(Schema.NullOr(Schema.DateTimeUtcFromDate)),
  /** Interactive setup: where the browser returns after the OAuth2 step. */
  setupReturnUrl: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type ConnectionRow = typeof ConnectionRow.Type

/** A row of `keys`. */
export const KeyRow = Schema.Struct({ id: Schema.String, ...envelopeRowFields })
export type KeyRow = typeof KeyRow.Type

/** A row of `rate_limits`; the definition is decoded by the caller. */
export const RateLimitRow = Schema.Struct({
  id: Schema.String,
  ...envelopeRowFields,
  definition: Schema.Unknown,
  mode: Schema.Literals(["enforce", "observe"])
})
export type RateLimitRow = typeof RateLimitRow.Type

/** A row of `webhooks`; `secretEnc` is a ciphertext (envelope encryption), never plaintext. */
export const WebhookRow = Schema.Struct({
  id: Schema.String,
  ...envelopeRowFields,
  url: Schema.String,
  events: Schema.NullOr(Schema.Array(Schema.String)),
  labelSelector: Schema.NullOr(Schema.String),
  description: Schema.NullOr(Schema.String),
  secretEnc: Schema.String,
  state: Schema.Literals(["enabled", "disabled"]),
  failingSince: Schema.NullOr(Schema.DateTimeUtcFromDate)
})
export type WebhookRow = typeof WebhookRow.Type
