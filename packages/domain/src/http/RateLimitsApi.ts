/** Rate-limit endpoints (spec 4.6). The list filter is spelled `label_selector` there. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { CreateRateLimit, RateLimit, UpdateRateLimit } from "../RateLimit.ts"
import { Page } from "../Resource.ts"
import { listQuery, permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

const params = { id: Schema.String }

// spec 4.6 spells the selector filter of this list `label_selector`.
const { labelSelector, ...commonQuery } = listQuery
const rateLimitQuery = { ...commonQuery, label_selector: labelSelector }

export class RateLimitsApi extends HttpApiGroup.make("rateLimits")
  .add(
    HttpApiEndpoint.post("create", "/api/v1/rate-limits", {
      payload: CreateRateLimit,
      success: RateLimit.pipe(HttpApiSchema.status(201)),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("rate_limits", "create"))
      .annotate(OpenApi.Description, "Creates a rate-limit rule; the definition is validated in full."),
    HttpApiEndpoint.get("list", "/api/v1/rate-limits", {
      query: rateLimitQuery,
      success: Page(RateLimit),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("rate_limits", "list"))
      .annotate(OpenApi.Description, "Lists rate-limit rules the caller may see."),
    HttpApiEndpoint.get("get", "/api/v1/rate-limits/:id", { params, success: RateLimit, error: resourceErrors })
      .annotate(RequiredPermission, permission("rate_limits", "get"))
      .annotate(OpenApi.Description, "One rate-limit rule."),
    HttpApiEndpoint.patch("update", "/api/v1/rate-limits/:id", {
      params,
      payload: UpdateRateLimit,
      success: RateLimit,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("rate_limits", "update"))
      .annotate(OpenApi.Description, "Changes the definition, name, labels or annotations; omitted fields stay."),
    HttpApiEndpoint.delete("delete", "/api/v1/rate-limits/:id", {
      params,
      success: HttpApiSchema.NoContent,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("rate_limits", "delete"))
      .annotate(OpenApi.Description, "Deletes a rate-limit rule.")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Rate limits") {}
