/** Encryption-key resources (spec 2.1): per-namespace data keys; the key material is not exposed. */
import { Schema } from "effect"
import { UserAnnotations, UserLabels } from "./Labels.ts"
import { NamespacePath } from "./PermissionMatcher.ts"
import { envelopeFields, ResourceName } from "./Resource.ts"

/** A key as returned; `version` is the current data key version (1 until the first rotation). */
export const Key = Schema.Struct({ ...envelopeFields, version: Schema.Int }).annotate({ identifier: "Key" })
export type Key = typeof Key.Type

/** `POST /api/v1/keys`. */
export const CreateKey = Schema.Struct({
  namespace: NamespacePath,
  name: Schema.optionalKey(ResourceName),
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations)
}).annotate({ identifier: "CreateKey" })
export type CreateKey = typeof CreateKey.Type

/** `PATCH /api/v1/keys/{id}`. */
export const UpdateKey = Schema.Struct({
  name: Schema.optionalKey(ResourceName),
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations)
}).annotate({ identifier: "UpdateKey" })
export type UpdateKey = typeof UpdateKey.Type
