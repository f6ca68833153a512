/** Actor endpoints (API-CONVENTIONS "Resources"). */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Actor, CreateActor, UpdateActor } from "../Actor.ts"
import { Page } from "../Resource.ts"
import { listQuery, permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

const params = { id: Schema.String }

export class ActorsApi extends HttpApiGroup.make("actors")
  .add(
    HttpApiEndpoint.post("create", "/api/v1/actors", {
      payload: CreateActor,
      success: Actor.pipe(HttpApiSchema.status(201)),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("actors", "create"))
      .annotate(OpenApi.Description, "Creates an actor. Its permissions must stay inside its own namespace subtree."),
    HttpApiEndpoint.get("list", "/api/v1/actors", {
      query: { ...listQuery, externalId: Schema.optionalKey(Schema.String) },
      success: Page(Actor),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("actors", "list"))
      .annotate(OpenApi.Description, "Lists actors the caller may see."),
    HttpApiEndpoint.get("get", "/api/v1/actors/:id", { params, success: Actor, error: resourceErrors })
      .annotate(RequiredPermission, permission("actors", "get"))
      .annotate(OpenApi.Description, "One actor."),
    HttpApiEndpoint.patch("update", "/api/v1/actors/:id", {
      params,
      payload: UpdateActor,
      success: Actor,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("actors", "update"))
      .annotate(OpenApi.Description, "Renames an actor or replaces its user labels, annotations or permissions."),
    HttpApiEndpoint.delete("delete", "/api/v1/actors/:id", {
      params,
      success: HttpApiSchema.NoContent,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("actors", "delete"))
      .annotate(OpenApi.Description, "Deletes an actor and releases its name; configured actors are read-only.")
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Actors") {}
