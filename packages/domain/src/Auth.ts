/**
 * Authentication contract shared by the server and the `cli` (spec 5, API-CONVENTIONS
 * "Authentication"): service ids, the permission shape and the JWT claims.
 */
import { Schema } from "effect"
import { AgentAccessClaim } from "./AgentAccess.ts"

/** The four service ids a token's `aud` allowlist may name (spec 5.2). */
export const ServiceId = Schema.Literals(["api", "admin-api", "public", "worker"])
export type ServiceId = typeof ServiceId.Type

export const allServiceIds: ReadonlyArray<ServiceId> = ["api", "admin-api", "public", "worker"]

/**
 * A permission grant: namespace (path, subtree matcher `x.**`, or a template such as
 * `{{external_id}}`), resources and verbs (`*` matches any), optional resource ids.
 */
export const Permission = Schema.Struct({
  namespace: Schema.String,
  resources: Schema.Array(Schema.String),
  verbs: Schema.Array(Schema.String),
  resourceIds: Schema.optionalKey(Schema.Array(Schema.String))
}).annotate({ identifier: "Permission" })
export type Permission = typeof Permission.Type

/**
 * Claims of an actor JWT. `sub` is the actor's `externalId`; `aud` absent means every service;
 * `permissions` restrict the token further (they never widen the actor's own grants);
 * `nonce` makes the token single use and requires `exp`.
 */
export const TokenClaims = Schema.Struct({
  sub: Schema.String,
  aud: Schema.optionalKey(Schema.Union([ServiceId, Schema.Array(ServiceId)])),
  exp: Schema.optionalKey(Schema.Number),
  iat: Schema.optionalKey(Schema.Number),
  nbf: Schema.optionalKey(Schema.Number),
  jti: Schema.optionalKey(Schema.String),
  namespace: Schema.optionalKey(Schema.String),
  permissions: Schema.optionalKey(Schema.Array(Permission)),
  nonce: Schema.optionalKey(Schema.String),
  /** Narrows what an agent may call over MCP (docs/agents.md); such a token is accepted only on `/mcp`. */
  agent_access: Schema.optionalKey(AgentAccessClaim)
})
export type TokenClaims = typeof TokenClaims.Type
