/**
 * The bearer middleware (spec 5.1): verifies the token for the service it arrived on, provides
 * `CurrentActor`, and refuses with 403 an endpoint whose declared permission the caller holds in
 * no namespace at all.
 */
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import type { IncomingMessage } from "node:http"
import type { HttpApiEndpoint } from "effect/http-api"
import { Forbidden, Unauthorized } from "@svc/domain/Errors"
import { hasAnyGrant } from "@svc/domain/PermissionMatcher"
import { type AuthenticatedActor, Authentication, CurrentActor, RequiredPermission } from "@svc/domain/http/Security"
import { Authenticator } from "../auth/Authenticator.ts"
import { CurrentService } from "./CurrentService.ts"
import { noteInboundActor } from "../telemetry/Inbound.ts"

const missing = new Unauthorized({ error: "a bearer token is required", code: "unauthorized" })

/**
 * Refuses with 403 an endpoint whose declared `RequiredPermission` the actor (narrowed by its
 * token restrictions) holds in no namespace at all; shared by every authentication middleware.
 */
export const requirePermission = (
  actor: AuthenticatedActor,
  endpoint: HttpApiEndpoint.Top
): Effect.Effect<void, Forbidden> => {
  const required = Context.getOption(endpoint.annotations, RequiredPermission)
  if (Option.isNone(required) || hasAnyGrant(actor, required.value.resource, required.value.verb)) return Effect.void
  return Effect.fail(
    new Forbidden({
      error: `permission ${required.value.resource}:${required.value.verb} is required`,
      code: "forbidden"
    })
  )
}

/** The bearer middleware of the api, admin-api and worker services (the service comes from `CurrentService`). */
export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.gen(function* () {
    const authenticator = yield* Authenticator
    const service = yield* CurrentService
    return Authentication.of({
      bearer: Effect.fnUntraced(function* (httpEffect, { credential, endpoint }) {
        const token = Redacted.value(credential)
        if (token === "") return yield* missing
        const actor = yield* authenticator.authenticate(token, service)
        // The access log names the caller.
        noteInboundActor(
          NodeHttpServerRequest.toIncomingMessage(yield* HttpServerRequest.HttpServerRequest) as IncomingMessage,
          actor.id
        )
        yield* requirePermission(actor, endpoint)
        return yield* Effect.provideService(httpEffect, CurrentActor, actor)
      })
    })
  })
)
