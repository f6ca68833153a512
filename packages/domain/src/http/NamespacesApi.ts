/** Namespace endpoints (API-CONVENTIONS "Resources"): a namespace is addressed by its path. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { CreateNamespace, Namespace, UpdateNamespace } from "../Namespace.ts"
import { Page } from "../Resource.ts"
import { listQuery, permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

const params = { path: Schema.String }

export class NamespacesApi extends HttpApiGroup.make("namespaces")
  .add(
    HttpApiEndpoint.post("create", "/api/v1/namespaces", {
      payload: CreateNamespace,
      success: Namespace.pipe(HttpApiSchema.status(201)),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("namespaces", "create"))
      .annotate(OpenApi.Description, "Creates a child namespace; the parent must exist."),
    HttpApiEndpoint.get("list", "/api/v1/namespaces", {
      query: listQuery,
      success: Page(Namespace),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("namespaces", "list"))
      .annotate(OpenApi.Description, "Lists namespaces the caller may see, one page at a time."),
    HttpApiEndpoint.get("get", "/api/v1/namespaces/:path", { params, success: Namespace, error: resourceErrors })
      .annotate(RequiredPermission, permission("namespaces", "get"))
      .annotate(OpenApi.Description, "One namespace by path."),
    HttpApiEndpoint.patch("update", "/api/v1/namespaces/:path", {
      params,
      payload: UpdateNamespace,
      success: Namespace,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("namespaces", "update"))
      .annotate(OpenApi.Description, "Replaces user labels and/or annotations; the name is read-only."),
    HttpApiEndpoint.delete("delete", "/api/v1/namespaces/:path", {
      params,
      success: HttpApiSchema.NoContent,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("namespaces", "delete"))
      .annotate(OpenApi.Description, "Deletes an empty namespace (no live children or resources).")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Namespaces") {}
