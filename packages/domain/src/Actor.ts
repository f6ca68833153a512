/** Actors (spec 2.1, 5): users and service accounts that tokens name by `externalId`. */
import { Schema } from "effect"
import { Permission } from "./Auth.ts"
import { UserAnnotations, UserLabels } from "./Labels.ts"
import { NamespacePath, NamespacePattern } from "./PermissionMatcher.ts"
import { envelopeFields, ResourceName } from "./Resource.ts"

/** A permission as written through the API: its namespace must be a valid matcher. */
export const PermissionInput = Schema.Struct({
  namespace: NamespacePattern,
  resources: Schema.Array(Schema.String.check(Schema.isMinLength(1))).check(Schema.isMinLength(1)),
  verbs: Schema.Array(Schema.String.check(Schema.isMinLength(1))).check(Schema.isMinLength(1)),
  resourceIds: Schema.optionalKey(Schema.Array(Schema.String))
}).annotate({ identifier: "PermissionInput" })

/** An external id: the JWT `sub` of the actor's tokens. */
export const ExternalId = Schema.String.check(
  Schema.makeFilter((value: string) => value.length >= 1 && value.length <= 255 && value.trim() === value, {
    message: "externalId is 1 to 255 characters without surrounding whitespace"
  })
)

/** An actor as returned; `source` tells configured actors (read-only) from API-managed ones. */
export const Actor = Schema.Struct({
  ...envelopeFields,
  externalId: Schema.String,
  permissions: Schema.Array(Permission),
  source: Schema.Literals(["config", "api"])
}).annotate({ identifier: "Actor" })
export type Actor = typeof Actor.Type

/** `POST /api/v1/actors`. */
export const CreateActor = Schema.Struct({
  externalId: ExternalId,
  namespace: NamespacePath,
  name: Schema.optionalKey(ResourceName),
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations),
  permissions: Schema.optionalKey(Schema.Array(PermissionInput))
}).annotate({ identifier: "CreateActor" })
export type CreateActor = typeof CreateActor.Type

/** `PATCH /api/v1/actors/{id}`: omitted fields are unchanged; labels replace the user set. */
export const UpdateActor = Schema.Struct({
  name: Schema.optionalKey(ResourceName),
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations),
  permissions: Schema.optionalKey(Schema.Array(PermissionInput))
}).annotate({ identifier: "UpdateActor" })
export type UpdateActor = typeof UpdateActor.Type
