/** Application metrics (spec 4.7): the query endpoint and the schema dashboards read. */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { MetricsQueryBody, MetricsQueryResult, MetricsSchema } from "../Metrics.ts"
import { permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

export class MetricsApi extends HttpApiGroup.make("metrics")
  .add(
    HttpApiEndpoint.post("query", "/api/v1/metrics/query", {
      payload: MetricsQueryBody,
      success: MetricsQueryResult,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("app-metrics", "query"))
      .annotate(
        OpenApi.Description,
        "Time series of request-event metrics over `range` in steps of `range.step`, narrowed to the namespaces where the caller may query app metrics, to `namespace` (a path or `root.acme.**`) and to `labelSelector` over the events' frozen labels. One series per query and combination of `groupBy` values; counts have a point (0 when empty) for every step, averages and p95 only for steps with events. See GET /api/v1/metrics/schema for the metrics, aggregations and groupBy keys; 400 names each invalid field."
      ),
    HttpApiEndpoint.get("schema", "/api/v1/metrics/schema", { success: MetricsSchema, error: resourceErrors })
      .annotate(RequiredPermission, permission("app-metrics", "schema"))
      .annotate(
        OpenApi.Description,
        "The metrics, their aggregations and groupBy keys (spec 4.7), whether this release answers each, and the query limits."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Metrics") {}
