/** Handlers of the metrics group (spec 4.7) on the api and the admin-api. */
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { MetricsApi } from "@svc/domain/http/MetricsApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Metrics } from "../events/Metrics.ts"
import { withActor } from "./WithActor.ts"

const handlers = (h: HttpApiBuilder.Handlers.FromGroup<typeof MetricsApi>) =>
  Effect.map(Metrics, (metrics) =>
    h
      .handle("query", ({ payload }) => withActor((a) => metrics.query(a, payload)))
      .handle("schema", () => withActor(() => Effect.succeed(metrics.schema)))
  )

export const ApiMetricsHttp = HttpApiBuilder.group(ApiV1, "metrics", handlers)

export const AdminApiMetricsHttp = HttpApiBuilder.group(AdminApiV1, "metrics", handlers)
