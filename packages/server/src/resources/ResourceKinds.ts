/** The resource types as the generic resource operations see them (spec 2.1, 2.3, 2.4). */
import type { ResourceToken } from "@svc/domain/Labels"
import { type ResourceType, resourceTypes } from "@svc/domain/Resource"
import {
  ActorResourceRow,
  ConnectionRow,
  ConnectorRow,
  KeyRow,
  NamespaceRow,
  RateLimitRow,
  WebhookRow
} from "@svc/sql/Rows"
import type { PropagationParent, TableName } from "@svc/sql/ResourceRepo"
import type { DateTime, Schema } from "effect"

/** The columns every resource row has besides its identity. */
export interface EnvelopeColumns {
  readonly namespace: string
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly annotations: Readonly<Record<string, string>>
  readonly createdAt: DateTime.Utc
  readonly updatedAt: DateTime.Utc
}

/**
 * A resource row: its identity (`path` for a namespace, `id` for the rest; never both, so the
 * identity is always the one of the two a row has) and the common columns.
 */
export type EnvelopeRow = EnvelopeColumns &
  ({ readonly id: string; readonly path?: never } | { readonly path: string; readonly id?: never })

/** The identity of a resource row: its namespace path or its id. */
export const rowId = (row: EnvelopeRow): string => ("path" in row ? row.path : row.id)

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
}

/** A kind of `type` whose table is named like the type; label token and permission from the domain. */
const kind = <Row extends EnvelopeRow>(
  type: ResourceType,
  noun: string,
  row: Schema.Codec<Row, unknown>,
  propagates?: PropagationParent
): Kind<Row> => ({
  type,
  table: type,
  rt: resourceTypes[type].rt,
  permission: resourceTypes[type].permission,
  noun,
  row,
  propagates
})

export const namespaces = kind<NamespaceRow>("namespaces", "namespace", NamespaceRow, "namespace")
export const actors = kind<ActorResourceRow>("actors", "actor", ActorResourceRow)
export const connectors = kind<ConnectorRow>("connectors", "connector", ConnectorRow, "connector")
export const connections = kind<ConnectionRow>("connections", "connection", ConnectionRow)
export const keys = kind<KeyRow>("keys", "key", KeyRow)
export const rateLimits = kind<RateLimitRow>("rate_limits", "rate limit", RateLimitRow)
export const webhooks = kind<WebhookRow>("webhooks", "webhook", WebhookRow)

/** Every kind by resource type, for the routes that serve all types alike. */
export const byType: Readonly<Record<ResourceType, Kind<EnvelopeRow>>> = {
  namespaces,
  actors,
  connectors,
  connections,
  keys,
  rate_limits: rateLimits,
  webhooks
}
