/** The resource types as the generic resource operations see them (spec 2.1, 2.3, 2.4). */
import type { ResourceToken } from "@svc/domain/Labels"
import { type ResourceType, resourceTypes } from "@svc/domain/Resource"
import { ActorResourceRow, ConnectionRow, ConnectorRow, KeyRow, NamespaceRow, RateLimitRow } from "@svc/sql/Rows"
import type { PropagationParent, TableName } from "@svc/sql/ResourceRepo"
import type { DateTime, Schema } from "effect"

/** The columns every resource row has, whatever its identity column. */
export interface EnvelopeRow {
  readonly namespace: string
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly annotations: Readonly<Record<string, string>>
  readonly createdAt: DateTime.Utc
  readonly updatedAt: DateTime.Utc
}

/** A resource type: table, label token, permission resource. */
export interface KindInfo {
  readonly type: ResourceType
  readonly table: TableName
  readonly rt: ResourceToken
  readonly permission: string
  /** Singular noun for messages. */
  readonly noun: string
  /** Which parent type this resource is for carry-forward (its changes are propagated). */
  readonly propagates: PropagationParent | undefined
}

/** A resource type with how its rows are decoded and identified. */
export interface Kind<Row extends EnvelopeRow> extends KindInfo {
  readonly row: Schema.Codec<Row, unknown>
  readonly idOf: (row: Row) => string
}

const byId = (row: { readonly id: string }) => row.id

/** A kind of `type` whose table is named like the type; label token and permission from the domain. */
const kind = <Row extends EnvelopeRow>(
  type: ResourceType,
  noun: string,
  row: Schema.Top,
  idOf: (row: Row) => string,
  propagates?: PropagationParent
): Kind<Row> => ({
  type,
  table: type,
  rt: resourceTypes[type].rt,
  permission: resourceTypes[type].permission,
  noun,
  row: row as unknown as Schema.Codec<Row, unknown>,
  idOf,
  propagates
})

export const namespaces = kind<NamespaceRow>("namespaces", "namespace", NamespaceRow, (row) => row.path, "namespace")
export const actors = kind<ActorResourceRow>("actors", "actor", ActorResourceRow, byId)
export const connectors = kind<ConnectorRow>("connectors", "connector", ConnectorRow, byId, "connector")
export const connections = kind<ConnectionRow>("connections", "connection", ConnectionRow, byId)
export const keys = kind<KeyRow>("keys", "key", KeyRow, byId)
export const rateLimits = kind<RateLimitRow>("rate_limits", "rate limit", RateLimitRow, byId)

/** Every kind by resource type, for the routes that serve all types alike. */
export const byType: Readonly<Record<ResourceType, Kind<EnvelopeRow>>> = {
  namespaces: namespaces as unknown as Kind<EnvelopeRow>,
  actors: actors as unknown as Kind<EnvelopeRow>,
  connectors: connectors as unknown as Kind<EnvelopeRow>,
  connections: connections as unknown as Kind<EnvelopeRow>,
  keys: keys as unknown as Kind<EnvelopeRow>,
  rate_limits: rateLimits as unknown as Kind<EnvelopeRow>
}
