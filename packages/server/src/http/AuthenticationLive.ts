/**
 * The bearer middleware (spec 5.1): verifies the token for the service it arrived on, provides
 * `CurrentActor`, and refuses with 403 an endpoint whose declared permission the caller holds in
 * no namespace at all.
 */
import { Context, Effect, Layer, Option, Redacted } from "effect"
import { Forbidden, Unauthorized } from "@svc/domain/Errors"
import { hasAnyGrant } from "@svc/domain/PermissionMatcher"
import { Authentication, CurrentActor, RequiredPermission } from "@svc/domain/http/Security"
import { Authenticator } from "../services/Authenticator.ts"
import { CurrentService } from "../services/CurrentService.ts"

const missing = new Unauthorized({ error: "a bearer token is required", code: "unauthorized" })

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
        const required = Context.getOption(endpoint.annotations, RequiredPermission)
        if (Option.isSome(required) && !hasAnyGrant(actor, required.value.resource, required.value.verb)) {
          return yield* new Forbidden({
            error: `permission ${required.value.resource}:${required.value.verb} is required`,
            code: "forbidden"
          })
        }
        return yield* Effect.provideService(httpEffect, CurrentActor, actor)
      })
    })
  })
)
