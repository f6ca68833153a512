/** Endpoints about the caller's own authentication. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Permission, ServiceId } from "../Auth.ts"
import { Authentication } from "./Security.ts"

/** The authenticated actor and what its token allows, as returned by `whoami`. */
export const WhoAmI = Schema.Struct({
  actor: Schema.Struct({
    id: Schema.String,
    externalId: Schema.String,
    name: Schema.String,
    namespace: Schema.String,
    labels: Schema.Record(Schema.String, Schema.String),
    permissions: Schema.Array(Permission)
  }).annotate({ identifier: "WhoAmIActor" }),
  token: Schema.Struct({
    service: ServiceId,
    expiresAt: Schema.optionalKey(Schema.String),
    restrictions: Schema.optionalKey(Schema.Array(Permission))
  }).annotate({ identifier: "WhoAmIToken" })
}).annotate({ identifier: "WhoAmI" })
export type WhoAmI = typeof WhoAmI.Type

export class AuthApi extends HttpApiGroup.make("auth")
  .add(
    HttpApiEndpoint.get("whoami", "/api/v1/auth/whoami", { success: WhoAmI }).annotate(
      OpenApi.Description,
      "The actor behind the bearer token, its permissions and the token's restrictions."
    )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Authentication") {}
