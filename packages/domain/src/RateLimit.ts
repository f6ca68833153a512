/** Rate-limit resources (spec 2.8, 4.6): a namespace-scoped rule with a validated definition. */
import { Result, Schema } from "effect"
import { UserAnnotations, UserLabels } from "./Labels.ts"
import { NamespacePath } from "./PermissionMatcher.ts"
import { makeRateLimitDefinition } from "./RateLimitDefinition.ts"
import { envelopeFields, ResourceName } from "./Resource.ts"
import { formatSelectorProblem, parseSelector } from "./Selector.ts"

/** The definition with its `label_selector` checked by the selector parser (spec 2.6). */
export const Definition = makeRateLimitDefinition({
  validateLabelSelector: (text) =>
    Result.match(parseSelector(text), {
      onSuccess: () => undefined,
      onFailure: (problems) => problems.map(formatSelectorProblem).join("; ")
    })
}).annotate({ identifier: "RateLimitDefinition" })
export type Definition = typeof Definition.Type

/** A rate limit as returned: defaults of the definition are materialised. */
export const RateLimit = Schema.Struct({ ...envelopeFields, definition: Definition }).annotate({
  identifier: "RateLimit"
})
export type RateLimit = typeof RateLimit.Type

/** `POST /api/v1/rate-limits`. */
export const CreateRateLimit = Schema.Struct({
  namespace: NamespacePath,
  name: Schema.optionalKey(ResourceName),
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations),
  definition: Definition
}).annotate({ identifier: "CreateRateLimit" })
export type CreateRateLimit = typeof CreateRateLimit.Type

/**
 * `PATCH /api/v1/rate-limits/{id}`: omitted fields are unchanged. `namespace` is accepted only to
 * answer that changing it means replacing the resource (spec 2.8).
 */
export const UpdateRateLimit = Schema.Struct({
  namespace: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(ResourceName),
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations),
  definition: Schema.optionalKey(Definition)
}).annotate({ identifier: "UpdateRateLimit" })
export type UpdateRateLimit = typeof UpdateRateLimit.Type
