/** Rows → API resources (API-CONVENTIONS "Resources": camelCase envelopes, ISO timestamps). */
import type { Actor } from "@svc/domain/Actor"
import type { Connection } from "@svc/domain/Connection"
import type { Connector, ConnectorVersion } from "@svc/domain/Connector"
import { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import type { Key } from "@svc/domain/Key"
import { type Webhook, webhookEventTypes } from "@svc/domain/Webhook"
import type { Namespace } from "@svc/domain/Namespace"
import { Definition, type RateLimit } from "@svc/domain/RateLimit"
import type {
  ActorResourceRow,
  ConnectionRow,
  ConnectorRow,
  ConnectorVersionRow,
  KeyRow,
  NamespaceRow,
  RateLimitRow,
  WebhookRow
} from "@svc/sql/Rows"
import { DateTime, Schema } from "effect"
import type { EnvelopeRow } from "./ResourceKinds.ts"

const envelope = <Id extends string>(id: Id, row: EnvelopeRow) => ({
  id,
  name: row.name,
  namespace: row.namespace,
  labels: row.labels,
  annotations: row.annotations,
  createdAt: DateTime.formatIso(row.createdAt),
  updatedAt: DateTime.formatIso(row.updatedAt)
})

export const namespace = (row: NamespaceRow): Namespace => ({ ...envelope(row.path, row), path: row.path })

export const actor = (row: ActorResourceRow): Actor => ({
  ...envelope(row.id, row),
  externalId: row.externalId,
  permissions: row.permissions,
  source: row.source
})

export const connector = (row: ConnectorRow): Connector => ({
  ...envelope(row.id, row),
  version: row.version,
  state: row.state,
  type: row.type
})

/** `connector` with its current version's display fields (`display_name`, `description`, `logo_url`). */
export const withDisplay = (connector: Connector, definition: ConnectorDefinition): Connector => ({
  ...connector,
  ...(definition.display_name === undefined ? {} : { displayName: definition.display_name }),
  ...(definition.description === undefined ? {} : { description: definition.description }),
  ...(definition.logo_url === undefined ? {} : { logoUrl: definition.logo_url })
})

const decodeDefinition = Schema.decodeUnknownSync(ConnectorDefinition)

export const connectorVersion = (row: ConnectorVersionRow): ConnectorVersion => ({
  connectorId: row.connectorId,
  version: row.version,
  state: row.state,
  definition: decodeDefinition(row.definition),
  createdAt: DateTime.formatIso(row.createdAt),
  updatedAt: DateTime.formatIso(row.updatedAt)
})

/** A connection; `configuration` is the decrypted value with its secret fields already redacted. */
export const connection = (row: ConnectionRow, configuration: Readonly<Record<string, unknown>>): Connection => ({
  ...envelope(row.id, row),
  connectorId: row.connectorId,
  connectorVersion: row.connectorVersion,
  state: row.state,
  healthState: row.healthState,
  setupStepId: row.setupStepId,
  configuration,
  ...(row.grantedScopes === undefined || row.grantedScopes === null ? {} : { grantedScopes: row.grantedScopes })
})

/** A key with its current data key version. */
export const key = (row: KeyRow, version: number): Key => ({ ...envelope(row.id, row), version })

const decodeRateLimitDefinition = Schema.decodeUnknownSync(Definition)

export const rateLimit = (row: RateLimitRow): RateLimit => ({
  ...envelope(row.id, row),
  definition: decodeRateLimitDefinition(row.definition)
})

/** The stored (encoded) form of a decoded rate-limit definition. */
export const encodeRateLimitDefinition = Schema.encodeSync(Definition)

/** A webhook endpoint as returned: never its secret. */
export const webhook = (row: WebhookRow): Webhook => ({
  ...envelope(row.id, row),
  url: row.url,
  events: (row.events ?? webhookEventTypes) as Webhook["events"],
  label_selector: row.labelSelector,
  description: row.description,
  state: row.state
})
