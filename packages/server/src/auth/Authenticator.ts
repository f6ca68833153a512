/**
 * Turns a bearer token into the request's actor (spec 5): signature and claims through
 * `TokenVerifier`, then the actor named by `sub` from `ActorDirectory`. Every refusal is a 401
 * with a stable code; a store outage is a 503. No state changes before the signature verifies.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { ServiceId } from "@svc/domain/Auth"
import { ServiceUnavailable, Unauthorized } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { ActorDirectory } from "../resources/ActorDirectory.ts"
import { TokenVerifier } from "./TokenVerifier.ts"

const rejectionMessages: Record<string, string> = {
  malformed: "the bearer token is malformed",
  bad_signature: "the bearer token signature is invalid",
  algorithm_not_allowed: "the bearer token algorithm is not accepted",
  expired: "the bearer token has expired",
  not_yet_valid: "the bearer token is not valid yet",
  audience: "the bearer token is not valid for this service",
  nonce_replayed: "the bearer token nonce was already used",
  nonce_without_exp: "a bearer token with a nonce must expire",
  claims_invalid: "the bearer token claims are invalid"
}

const agentTokenRefused = new Unauthorized({
  error: "a token with an agent_access claim is accepted only on /mcp",
  code: "agent_token"
})

export class Authenticator extends Context.Service<
  Authenticator,
  {
    /** Any route's caller; a token with an `agent_access` claim is refused (401 `agent_token`). */
    authenticate(
      token: string,
      service: ServiceId
    ): Effect.Effect<AuthenticatedActor, Unauthorized | ServiceUnavailable>
    /** The caller of `/mcp` (docs/agents.md): any token, its `agent_access` claim kept on the actor. */
    authenticateAgent(
      token: string,
      service: ServiceId
    ): Effect.Effect<AuthenticatedActor, Unauthorized | ServiceUnavailable>
  }
>()("svc/server/Authenticator") {
  static readonly layerNoDeps = Layer.effect(
    Authenticator,
    Effect.gen(function* () {
      const verifier = yield* TokenVerifier
      const directory = yield* ActorDirectory
      const authenticateAgent = Effect.fnUntraced(function* (token: string, service: ServiceId) {
        const verified = yield* verifier.verify(token, service).pipe(
          Effect.catchTags({
            TokenRejected: (e) =>
              Effect.fail(
                new Unauthorized({
                  error: rejectionMessages[e.reason] ?? "the bearer token is invalid",
                  code: e.reason === "expired" ? "token_expired" : "invalid_token"
                })
              ),
            StoreUnavailable: () =>
              Effect.fail(
                new ServiceUnavailable({ error: "the counter store is unavailable", code: "store_unavailable" })
              )
          })
        )
        const claims = verified.claims
        const found = yield* directory.findByExternalId(claims.sub)
        if (Option.isNone(found)) {
          return yield* new Unauthorized({
            error: "the token names an unknown actor: create it (POST /api/v1/actors) or list it in system_auth.actors",
            code: "unknown_actor"
          })
        }
        const authenticated: AuthenticatedActor = {
          ...found.value,
          restrictions: claims.permissions,
          service,
          expiresAt: claims.exp,
          ...(claims.agent_access === undefined ? {} : { agentAccess: claims.agent_access })
        }
        return authenticated
      })
      // An agent token reaches only what its claim allows, which only /mcp enforces: elsewhere
      // (`_proxy` above all) it would reach everything its permissions allow.
      const authenticate = (token: string, service: ServiceId) =>
        Effect.flatMap(authenticateAgent(token, service), (actor) =>
          actor.agentAccess === undefined ? Effect.succeed(actor) : Effect.fail(agentTokenRefused)
        )
      return Authenticator.of({ authenticate, authenticateAgent })
    })
  )
}
