/**
 * Authentication and authorization contract of the HTTP APIs (spec 5, STYLE.md pattern 2):
 * the bearer middleware that provides `CurrentActor`, and the endpoint annotation that declares
 * the permission an endpoint needs.
 */
import { Context } from "effect"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import type { AgentAccessClaim } from "../AgentAccess.ts"
import type { Permission, ServiceId } from "../Auth.ts"
import { Forbidden, ServiceUnavailable, Unauthorized } from "../Errors.ts"

/** The fields of an actor that authentication and authorization read. */
export interface ActorIdentity {
  readonly id: string
  readonly externalId: string
  readonly namespace: string
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly annotations: Readonly<Record<string, string>>
  readonly permissions: ReadonlyArray<Permission>
}

/** The authenticated caller of a request: the actor plus what its token restricts. */
export interface AuthenticatedActor extends ActorIdentity {
  /** Token restrictions (spec 5.5); absent means the actor's own permissions apply unchanged. */
  readonly restrictions: ReadonlyArray<Permission> | undefined
  /** The service the request arrived on. */
  readonly service: ServiceId
  /** Token expiry in epoch seconds, when the token has one. */
  readonly expiresAt: number | undefined
  /**
   * The token's `agent_access` claim (docs/agents.md): narrows what `call_connection` may reach.
   * A token carrying it is accepted only on `/mcp`.
   */
  readonly agentAccess?: AgentAccessClaim | undefined
}

/** The actor of the current request, provided by `Authentication`. */
export class CurrentActor extends Context.Service<CurrentActor, AuthenticatedActor>()("svc/http/CurrentActor") {}

/**
 * The permission an endpoint requires (resource and verb). The middleware refuses with 403 a
 * caller that holds the pair in no namespace at all; handlers check the resource's namespace.
 */
export class RequiredPermission extends Context.Service<
  RequiredPermission,
  { readonly resource: string; readonly verb: string }
>()("svc/http/RequiredPermission") {}

/** Bearer-JWT authentication (spec 5.1); 401 on a missing or invalid token. */
export class Authentication extends HttpApiMiddleware.Service<
  Authentication,
  {
    provides: CurrentActor
    requires: never
  }
>()("svc/http/Authentication", {
  requiredForClient: true,
  security: { bearer: HttpApiSecurity.bearer },
  error: [Unauthorized, Forbidden, ServiceUnavailable]
}) {}
