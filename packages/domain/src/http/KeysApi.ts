/** Encryption-key resource endpoints (API-CONVENTIONS "Resources"). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { CreateKey, Key, UpdateKey } from "../Key.ts"
import { Page } from "../Resource.ts"
import { listQuery, permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

const params = { id: Schema.String }

export class KeysApi extends HttpApiGroup.make("keys")
  .add(
    HttpApiEndpoint.post("create", "/api/v1/keys", {
      payload: CreateKey,
      success: Key.pipe(HttpApiSchema.status(201)),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("keys", "create"))
      .annotate(OpenApi.Description, "Creates an encryption-key resource in a namespace."),
    HttpApiEndpoint.get("list", "/api/v1/keys", { query: listQuery, success: Page(Key), error: resourceErrors })
      .annotate(RequiredPermission, permission("keys", "list"))
      .annotate(OpenApi.Description, "Lists keys the caller may see."),
    HttpApiEndpoint.get("get", "/api/v1/keys/:id", { params, success: Key, error: resourceErrors })
      .annotate(RequiredPermission, permission("keys", "get"))
      .annotate(OpenApi.Description, "One key."),
    HttpApiEndpoint.patch("update", "/api/v1/keys/:id", {
      params,
      payload: UpdateKey,
      success: Key,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("keys", "update"))
      .annotate(OpenApi.Description, "Renames a key or replaces its user labels or annotations."),
    HttpApiEndpoint.delete("delete", "/api/v1/keys/:id", {
      params,
      success: HttpApiSchema.NoContent,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("keys", "delete"))
      .annotate(OpenApi.Description, "Deletes a key and releases its name."),
    HttpApiEndpoint.post("rotate", "/api/v1/keys/:id/_rotate", { params, success: Key, error: resourceErrors })
      .annotate(RequiredPermission, permission("keys", "update"))
      .annotate(
        OpenApi.Description,
        "Adds a new data key version: new secrets in the key's namespaces are sealed with it, older versions still decrypt, and stored secrets are re-encrypted in the background."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Keys") {}
