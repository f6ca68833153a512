import { Schema } from "effect"
import {
  HttpApi,
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "effect/http-api"

/** Test fixture: an HttpApi exercising every construct the Swagger 2.0 converter handles. */
export const WidgetId = Schema.String.pipe(Schema.brand("WidgetId")).annotate({
  identifier: "WidgetId",
  description: "A widget id (wdg_…)"
})

export const Widget = Schema.Struct({
  id: WidgetId,
  name: Schema.String.annotate({ examples: ["gear"] }),
  kind: Schema.Literals(["small", "large"]),
  version: Schema.Literal(1),
  weight: Schema.Finite.check(Schema.isGreaterThan(0)),
  note: Schema.NullOr(Schema.String),
  color: Schema.optionalKey(Schema.String),
  dimensions: Schema.Tuple([Schema.Finite, Schema.Finite]),
  labels: Schema.Record(Schema.String, Schema.String),
  shape: Schema.Union([
    Schema.Struct({ _tag: Schema.Literal("circle"), radius: Schema.Finite }),
    Schema.Struct({ _tag: Schema.Literal("square"), side: Schema.Finite })
  ])
}).annotate({ identifier: "Widget" })

export const CreateWidget = Schema.Struct({
  name: Schema.String,
  kind: Schema.optionalKey(Schema.Literals(["small", "large"])),
  note: Schema.optionalKey(Schema.NullOr(Schema.String))
}).annotate({ identifier: "CreateWidget" })

export class Unauthorized extends Schema.TaggedError<Unauthorized>()(
  "Unauthorized",
  {
    error: Schema.String
  },
  { httpApiStatus: 401 }
) {}

export class WidgetNotFound extends Schema.TaggedError<WidgetNotFound>()(
  "WidgetNotFound",
  {
    error: Schema.String,
    code: Schema.Literal("not_found")
  },
  { httpApiStatus: 404, description: "No such widget" }
) {}

export class NameConflict extends Schema.TaggedError<NameConflict>()(
  "NameConflict",
  {
    error: Schema.String,
    code: Schema.Literal("name_conflict")
  },
  { httpApiStatus: 409 }
) {}

export class Authentication extends HttpApiMiddleware.Service<Authentication>()("fixture/Authentication", {
  security: { bearer: HttpApiSecurity.bearer },
  error: Unauthorized
}) {}

export class WidgetsGroup extends HttpApiGroup.make("widgets")
  .add(
    HttpApiEndpoint.get("list", "/widgets", {
      query: {
        limit: Schema.optional(Schema.FiniteFromString),
        kind: Schema.optional(Schema.Literals(["small", "large"]))
      },
      headers: { "x-request-id": Schema.optional(Schema.String) },
      success: HttpApiSchema.WithHeaders(Schema.Array(Widget), {
        "x-total-count": Schema.FiniteFromString.annotate({ description: "Widgets in total" })
      })
    }).annotate(OpenApi.Summary, "List widgets"),
    HttpApiEndpoint.post("rename", "/widgets/:id/_rename", {
      params: { id: WidgetId },
      payload: Schema.Struct({ name: Schema.String, reason: Schema.optionalKey(Schema.String) }).pipe(
        HttpApiSchema.asFormUrlEncoded()
      ),
      success: Widget
    }),
    HttpApiEndpoint.get("get", "/widgets/:id", {
      params: { id: WidgetId },
      success: Widget,
      error: WidgetNotFound
    }),
    HttpApiEndpoint.post("create", "/widgets", {
      payload: CreateWidget,
      success: Widget.pipe(HttpApiSchema.status(201)),
      error: [NameConflict, HttpApiSchema.NoContent.pipe(HttpApiSchema.status(422))]
    }).annotate(OpenApi.Description, "Creates a widget."),
    HttpApiEndpoint.get("part", "/widgets/:id/parts/:partId", {
      params: { id: WidgetId, partId: Schema.String },
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/csv" })),
      error: WidgetNotFound
    }),
    HttpApiEndpoint.delete("remove", "/widgets/:id", {
      params: { id: WidgetId },
      success: HttpApiSchema.NoContent,
      error: WidgetNotFound
    })
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotate(OpenApi.Title, "Widgets") {}

export class PublicGroup extends HttpApiGroup.make("public", { topLevel: true }).add(
  HttpApiEndpoint.get("ping", "/ping", { success: Schema.String.pipe(HttpApiSchema.asText()) })
) {}

export class FixtureApi extends HttpApi.make("fixture")
  .add(WidgetsGroup)
  .add(PublicGroup)
  .annotate(OpenApi.Title, "Fixture API")
  .annotate(OpenApi.Version, "1.2.3") {}
