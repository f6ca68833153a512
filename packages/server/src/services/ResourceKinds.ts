/** The resource types as the generic resource operations see them (spec 2.1, 2.3, 2.4). */
import type { ResourceToken } from "@svc/domain/Labels"
import type { ResourceType } from "@svc/domain/Resource"
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

export const namespaces: Kind<NamespaceRow> = {
  type: "namespaces",
  table: "namespaces",
  rt: "ns",
  permission: "namespaces",
  noun: "namespace",
  row: NamespaceRow as Schema.Codec<NamespaceRow, unknown>,
  idOf: (row) => row.path,
  propagates: "namespace"
}

export const actors: Kind<ActorResourceRow> = {
  type: "actors",
  table: "actors",
  rt: "act",
  permission: "actors",
  noun: "actor",
  row: ActorResourceRow as Schema.Codec<ActorResourceRow, unknown>,
  idOf: byId,
  propagates: undefined
}

export const connectors: Kind<ConnectorRow> = {
  type: "connectors",
  table: "connectors",
  rt: "cxr",
  permission: "connectors",
  noun: "connector",
  row: ConnectorRow as Schema.Codec<ConnectorRow, unknown>,
  idOf: byId,
  propagates: "connector"
}

export const connections: Kind<ConnectionRow> = {
  type: "connections",
  table: "connections",
  rt: "cxn",
  permission: "connections",
  noun: "connection",
  row: ConnectionRow as Schema.Codec<ConnectionRow, unknown>,
  idOf: byId,
  propagates: undefined
}

export const keys: Kind<KeyRow> = {
  type: "keys",
  table: "keys",
  rt: "key",
  permission: "keys",
  noun: "key",
  row: KeyRow as Schema.Codec<KeyRow, unknown>,
  idOf: byId,
  propagates: undefined
}

export const rateLimits: Kind<RateLimitRow> = {
  type: "rate_limits",
  table: "rate_limits",
  rt: "rl",
  permission: "rate_limits",
  noun: "rate limit",
  row: RateLimitRow as Schema.Codec<RateLimitRow, unknown>,
  idOf: byId,
  propagates: undefined
}
