/** Task polling (spec 3.3, 4.5): `GET /api/v1/tasks/{taskId}` on the api, admin-api and public service. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Task } from "../Task.ts"
import { permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

export class TasksApi extends HttpApiGroup.make("tasks")
  .add(
    HttpApiEndpoint.get("get", "/api/v1/tasks/:taskId", {
      params: { taskId: Schema.String },
      success: Task,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("tasks", "get"))
      .annotate(
        OpenApi.Description,
        "The state of a background task (spec 3.3): active, completed (the intended terminal state: for a disconnect-all every connection is disconnected, whether or not each revocation succeeded), failed (with error) or unknown, and its progress. Only the actor that started it sees it; others get 404."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Tasks") {}
