/** Namespaces (spec 2.1, 2.2 rule 7): hierarchical dot paths under `root`; name = final segment. */
import { Schema } from "effect"
import { UserAnnotations, UserLabels } from "./Labels.ts"
import { NamespacePath } from "./PermissionMatcher.ts"
import { envelopeFields } from "./Resource.ts"

/** A namespace as returned: `id` and `path` are the path, `namespace` the path too (spec 2.3). */
export const Namespace = Schema.Struct({ ...envelopeFields, path: Schema.String }).annotate({ identifier: "Namespace" })
export type Namespace = typeof Namespace.Type

/** `POST /api/v1/namespaces`: the parent must exist; `root` always does. */
export const CreateNamespace = Schema.Struct({
  path: NamespacePath,
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations)
}).annotate({ identifier: "CreateNamespace" })
export type CreateNamespace = typeof CreateNamespace.Type

/** `PATCH /api/v1/namespaces/{path}`: `name` is accepted only to answer that it is read-only. */
export const UpdateNamespace = Schema.Struct({
  name: Schema.optionalKey(Schema.String),
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations)
}).annotate({ identifier: "UpdateNamespace" })
export type UpdateNamespace = typeof UpdateNamespace.Type
