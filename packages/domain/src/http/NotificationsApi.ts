/** Notification endpoints (spec 2.11, 4.4; API-CONVENTIONS "Tasks and notifications"). */
import { Schema, SchemaTransformation } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { MarkViewed, NotificationList } from "../Notification.ts"
import { Limit } from "../Resource.ts"
import { permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

/** A boolean query parameter written `true` or `false`. */
const BooleanParam = Schema.Literals(["true", "false"]).pipe(
  Schema.decodeTo(
    Schema.Boolean,
    SchemaTransformation.transform({
      decode: (text) => text === "true",
      encode: (value): "true" | "false" => (value ? "true" : "false")
    })
  )
)

/** List notifications and mark them viewed, on the api and admin-api. */
export class NotificationsApi extends HttpApiGroup.make("notifications")
  .add(
    HttpApiEndpoint.get("list", "/api/v1/notifications", {
      query: {
        include_viewed: Schema.optionalKey(BooleanParam),
        limit: Schema.optionalKey(Limit),
        cursor: Schema.optionalKey(Schema.String)
      },
      success: NotificationList,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("notifications", "list"))
      .annotate(
        OpenApi.Description,
        "Active notifications of the connections in namespaces where the caller may list notifications, newest first. Notices the caller has viewed are left out unless `include_viewed=true`. Follow `action_url` only when `can_action` is true."
      ),
    HttpApiEndpoint.post("markViewedBulk", "/api/v1/notifications/_viewed", {
      payload: MarkViewed,
      success: HttpApiSchema.NoContent,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("notifications", "update"))
      .annotate(
        OpenApi.Description,
        "Marks up to 1000 notifications viewed for the caller. Ids that are unknown, resolved or not visible to the caller are ignored."
      ),
    HttpApiEndpoint.post("markViewed", "/api/v1/notifications/:id/_viewed", {
      params: { id: Schema.String },
      success: HttpApiSchema.NoContent,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("notifications", "update"))
      .annotate(
        OpenApi.Description,
        "Marks one notification viewed for the caller; 404 when it is unknown, resolved or not visible."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Notifications") {}
