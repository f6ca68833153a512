/** Handlers of the `auth` group (`GET /api/v1/auth/whoami`) on api and admin-api. */
import { DateTime, Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApiV1, ApiV1, PublicApi } from "@svc/domain/http/Apis"
import type { WhoAmI } from "@svc/domain/http/AuthApi"
import { CurrentActor } from "@svc/domain/http/Security"

const whoami = Effect.gen(function* () {
  const actor = yield* CurrentActor
  const body: WhoAmI = {
    actor: {
      id: actor.id,
      externalId: actor.externalId,
      name: actor.name,
      namespace: actor.namespace,
      labels: actor.labels,
      permissions: actor.permissions
    },
    token: {
      service: actor.service,
      ...(actor.expiresAt === undefined
        ? {}
        : { expiresAt: DateTime.formatIso(DateTime.makeUnsafe(actor.expiresAt * 1000)) }),
      ...(actor.restrictions === undefined ? {} : { restrictions: actor.restrictions })
    }
  }
  return body
})

export const ApiAuthHttp = HttpApiBuilder.group(ApiV1, "auth", (h) => h.handle("whoami", () => whoami))
export const AdminApiAuthHttp = HttpApiBuilder.group(AdminApiV1, "auth", (h) => h.handle("whoami", () => whoami))
export const PublicAuthHttp = HttpApiBuilder.group(PublicApi, "auth", (h) => h.handle("whoami", () => whoami))
