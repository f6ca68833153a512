/**
 * Telemetry of the HTTP servers (spec 8.3, docs/telemetry.md): the Node-level inbound hook
 * (request id, server span, HTTP metrics, access log), the handler's parent span (so database,
 * OAuth2 and outbound spans hang from the request's span and log records carry its ids).
 * effect's own per-request server span is off: svc makes the spec's one, with the spec's
 * attributes only. The Prometheus scrape is never served here: it has its own listener
 * (`MetricsListener.ts`), so a service's `/metrics` is an unknown path (404).
 */
import { NodeHttpServerRequest } from "@effect/platform-node"
import type { ServiceId } from "@svc/domain/Auth"
import { AdminApiV1, ApiV1, PublicApi, WorkerApi } from "@svc/domain/http/Apis"
import { Effect, Layer, Tracer } from "effect"
import { HttpMiddleware, HttpRouter, HttpServerRequest } from "effect/http"
import { HttpApi, type HttpApiGroup } from "effect/http-api"
import type { IncomingMessage } from "node:http"
import type { RouteTemplate } from "../telemetry/Inbound.ts"
import { inboundSpanOf } from "../telemetry/Inbound.ts"
import { mcpPath } from "./McpRoutes.ts"
import type { TelemetryRuntimeShape } from "../telemetry/TelemetryLayer.ts"

/** Every endpoint's method and path template of `api`. */
const templatesOf = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>
): ReadonlyArray<RouteTemplate> => {
  const templates: Array<RouteTemplate> = []
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => templates.push({ method: endpoint.method, path: endpoint.path })
  })
  return templates
}

/** The endpoint templates of `service`'s API, the values `http.route` can take. */
export const routeTemplates = (service: ServiceId): ReadonlyArray<RouteTemplate> => {
  switch (service) {
    case "api":
      // The MCP endpoint is mounted beside the HttpApi (`McpRoutes.ts`).
      return [...templatesOf(ApiV1), { method: "POST", path: mcpPath }, { method: "DELETE", path: mcpPath }]
    case "admin-api":
      return templatesOf(AdminApiV1)
    case "public":
      return templatesOf(PublicApi)
    case "worker":
      return templatesOf(WorkerApi)
  }
}

/** Handlers run under the request's server span (when traced). */
const layerParentSpan: Layer.Layer<never, never, HttpRouter.HttpRouter> = HttpRouter.middleware(
  (effect) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const span = inboundSpanOf(NodeHttpServerRequest.toIncomingMessage(request) as IncomingMessage)
      return span === undefined ? effect : Effect.provideService(effect, Tracer.ParentSpan, span)
    }),
  { global: true }
)

/** The router layers of telemetry for one server. */
export const routerLayer = (runtime: TelemetryRuntimeShape): Layer.Layer<never, never, HttpRouter.HttpRouter> =>
  runtime.api.tracing ? layerParentSpan : Layer.empty

/** effect's built-in server span off (svc's inbound hook makes the spec's span). */
export const layerBuiltInTracerOff: Layer.Layer<never> = Layer.succeed(HttpMiddleware.TracerDisabledWhen, () => true)
