/**
 * The four HTTP servers of spec 1, each its own Node listener with its own router: api (HTTP),
 * admin-api (HTTPS), public and worker. Shared services (stores, authenticator, health) are
 * provided from outside so every server uses the same instances. On shutdown they drain
 * together (`ServerDrain`): no new connections, `Connection: close` on every answer still to
 * come, idle kept-alive sockets closed, in-flight requests finished within `http.drain_timeout`.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { ByteSize, Context, Effect, Layer } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServer, type HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { ServiceId } from "@svc/domain/Auth"
import { AdminApiV1, ApiV1, PublicApi, WorkerApi } from "@svc/domain/http/Apis"
import * as http from "node:http"
import * as https from "node:https"
import type { ResolvedConfig } from "../config/SvcConfig.ts"
import { listenError, listenerKey } from "../config/ListenError.ts"
import { Authenticator } from "../auth/Authenticator.ts"
import { CurrentService } from "./CurrentService.ts"
import * as SwaggerRoute from "../swagger/SwaggerRoute.ts"
import * as DocsRoute from "../swagger/DocsRoute.ts"
import { swaggerDocuments } from "../swagger/generate.ts"
import { AdminApiAuthHttp, ApiAuthHttp, PublicAuthHttp } from "./AuthHttp.ts"
import { layerRedactCredentialQuery } from "./BrowserPages.ts"
import { MarketplaceRoutes } from "./MarketplaceRoutes.ts"
import { AdminUiAuthenticationLive, AdminUiRoutes, AdminUiSessions } from "./AdminUiRoutes.ts"
import { ConnectUiRoutes } from "./ConnectUiRoutes.ts"
import * as OAuthRoutes from "./OAuthRoutes.ts"
import { PublicAuthenticationLive } from "./PublicAuthentication.ts"
import { AdminApiMetadataHttp, ApiMetadataHttp } from "./MetadataHttp.ts"
import { AdminApiNotificationsHttp, ApiNotificationsHttp, PublicNotificationsHttp } from "./NotificationsHttp.ts"
import { AdminApiProbesHttp, ApiProbesHttp } from "./ProbesHttp.ts"
import { DataPlane } from "../proxy/DataPlane.ts"
import { McpRoutes } from "./McpRoutes.ts"
import { makeNodeServer } from "./NodeServer.ts"
import { AdminApiProxyHttp, ApiProxyHttp } from "./ProxyHttp.ts"
import { AdminApiRequestEventsHttp, ApiRequestEventsHttp } from "./RequestEventsHttp.ts"
import { AdminApiResourcesHttp, ApiResourcesHttp, PublicResourcesHttp } from "./ResourcesHttp.ts"
import { AdminApiSearchHttp } from "./SearchHttp.ts"
import { AuthenticationLive } from "./AuthenticationLive.ts"
import { errorResponse, layerErrorHandling, type NotFoundPolicy } from "./ErrorHandling.ts"
import { layerInputGuard } from "./InputGuard.ts"
import { AdminApiSystemHttp, ApiSystemHttp, PublicSystemHttp, WorkerSystemHttp } from "./SystemHttp.ts"
import { EventLoopLag } from "./EventLoopLag.ts"
import { ServerDrain } from "./ServerDrain.ts"

export { type Drain, makeDrain, ServerDrain } from "./ServerDrain.ts"
import { TelemetryRuntime } from "../telemetry/TelemetryLayer.ts"
import { layerBuiltInTracerOff, routeTemplates, routerLayer as telemetryRoutes } from "./ServerTelemetry.ts"

const serverOptions: http.ServerOptions = {
  // SECURITY.md "Limits on every input": bounded headers and slow-client timeouts.
  maxHeaderSize: 16 * 1024,
  headersTimeout: 15_000,
  requestTimeout: 60_000,
  keepAliveTimeout: 5_000
}

/**
 * Unknown paths under `/api/` answer 401 to a caller without a valid token (route existence is
 * not disclosed to anonymous callers) and 404 otherwise.
 */
const apiNotFound =
  (authenticator: Authenticator["Service"], service: ServiceId): NotFoundPolicy =>
  (request: HttpServerRequest.HttpServerRequest) => {
    const notFound = errorResponse(404, "not found", "not_found")
    if (!request.url.startsWith("/api/")) return Effect.succeed(notFound)
    const header = request.headers.authorization ?? ""
    const token = header.toLowerCase().startsWith("bearer ") ? header.slice(7).trim() : ""
    if (token === "") return Effect.succeed(errorResponse(401, "a bearer token is required", "unauthorized"))
    return authenticator.authenticate(token, service).pipe(
      Effect.as(notFound),
      Effect.catchTags({
        Unauthorized: (e) => Effect.succeed(errorResponse(401, e.error, e.code)),
        ServiceUnavailable: (e) => Effect.succeed(errorResponse(503, e.error, e.code))
      })
    )
  }

const routes = (service: ServiceId) => {
  switch (service) {
    case "api":
      return Layer.mergeAll(
        HttpApiBuilder.layer(ApiV1, { openapiPath: "/openapi.json" }).pipe(
          Layer.provide([
            ApiSystemHttp,
            Layer.mergeAll(
              ApiAuthHttp,
              ApiResourcesHttp,
              ApiProbesHttp,
              ApiProxyHttp,
              ApiNotificationsHttp,
              ApiRequestEventsHttp,
              ApiMetadataHttp
            ).pipe(Layer.provide(AuthenticationLive))
          ])
        ),
        SwaggerRoute.layer(() => swaggerDocuments().api),
        DocsRoute.layer(ApiV1),
        McpRoutes
      )
    case "admin-api":
      return Layer.mergeAll(
        HttpApiBuilder.layer(AdminApiV1, { openapiPath: "/openapi.json" }).pipe(
          Layer.provide([
            AdminApiSystemHttp,
            Layer.mergeAll(
              AdminApiAuthHttp,
              AdminApiResourcesHttp,
              AdminApiProbesHttp,
              AdminApiProxyHttp,
              AdminApiNotificationsHttp,
              AdminApiRequestEventsHttp,
              AdminApiMetadataHttp,
              AdminApiSearchHttp
            ).pipe(Layer.provide(AdminUiAuthenticationLive))
          ])
        ),
        SwaggerRoute.layer(() => swaggerDocuments()["admin-api"]),
        DocsRoute.layer(AdminApiV1),
        AdminUiRoutes
      ).pipe(Layer.provide(AdminUiSessions.layer))
    case "public":
      return Layer.mergeAll(
        HttpApiBuilder.layer(PublicApi, { openapiPath: "/openapi.json" }).pipe(
          Layer.provide([
            PublicSystemHttp,
            Layer.mergeAll(PublicAuthHttp, PublicResourcesHttp, PublicNotificationsHttp).pipe(
              Layer.provide(PublicAuthenticationLive)
            )
          ])
        ),
        MarketplaceRoutes,
        OAuthRoutes.layer,
        ConnectUiRoutes
      )
    case "worker":
      return HttpApiBuilder.layer(WorkerApi).pipe(Layer.provide(WorkerSystemHttp))
  }
}

/** The admin-api certificate and key (PEM), read at startup. */
export interface TlsMaterial {
  readonly cert: Buffer
  readonly key: Buffer
}

/** `X-Svc-Door` (tests only, `http.door_header`): which door of the data plane took the request. */
const doorHeader = "x-svc-door"

const nodeServer = (config: ResolvedConfig, service: ServiceId, tls: TlsMaterial | undefined) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const drain = yield* ServerDrain
      const plane = yield* DataPlane
      const inbound = (yield* TelemetryRuntime).inbound(service, routeTemplates(service))
      const node =
        service === "admin-api" ? https.createServer({ ...serverOptions, ...tls }) : http.createServer(serverOptions)
      const track = drain.observer(node)
      // The data plane's warm door on the services that serve `_proxy` and `_proxy_raw`.
      const warm = service === "api" || service === "admin-api" ? plane.warmDoor(service) : undefined
      const observe = config.http.doorHeader
        ? (request: http.IncomingMessage, response: http.ServerResponse) => {
            track(request, response)
            inbound.onRequest(request, response)
            response.setHeader(doorHeader, "cold")
          }
        : (request: http.IncomingMessage, response: http.ServerResponse) => {
            track(request, response)
            inbound.onRequest(request, response)
          }
      const hook =
        warm !== undefined && config.http.doorHeader
          ? (request: http.IncomingMessage, response: http.ServerResponse) => {
              response.setHeader(doorHeader, "warm")
              if (warm(request, response)) return true
              response.setHeader(doorHeader, "cold")
              return false
            }
          : warm
      const { host, port } = config.listeners[service]
      // A failed bind is one line naming the key to change (`api.port: 8081 is in use …`).
      const server = makeNodeServer(node, { host, port }, observe, hook).pipe(
        Effect.mapError((e) => listenError(listenerKey(service), host, port, e))
      )
      return Layer.merge(Layer.effect(HttpServer.HttpServer, server), NodeHttpServer.layerHttpServices)
    })
  )

/**
 * The port each started service listens on, filled as its server binds: a `port: 0` listener
 * gets its port from the operating system, and this is where the start-up banner reads it.
 */
export class BoundPorts extends Context.Service<BoundPorts, Map<ServiceId, number>>()("@svc/server/http/BoundPorts") {}

const recordPort = (service: ServiceId) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const server = yield* HttpServer.HttpServer
      const ports = yield* BoundPorts
      if (server.address._tag !== "UnixPathAddress") ports.set(service, server.address.port)
    })
  )

/** One service's HTTP server, listening until the layer is released. */
export const serverLayer = (config: ResolvedConfig, service: ServiceId, tls: TlsMaterial | undefined) =>
  Layer.merge(
    HttpRouter.serve(
      Layer.mergeAll(
        routes(service),
        layerInputGuard,
        Layer.unwrap(Effect.map(TelemetryRuntime, telemetryRoutes)),
        Layer.unwrap(
          Effect.map(Authenticator, (authenticator) => layerErrorHandling(apiNotFound(authenticator, service)))
        )
      ),
      { disableLogger: true, disableListenLog: true }
    ),
    recordPort(service)
  ).pipe(
    Layer.provide(nodeServer(config, service, tls)),
    Layer.provide(Layer.succeed(CurrentService, service)),
    // effect's own server span off: the inbound hook makes the spec's.
    Layer.provide(layerBuiltInTracerOff),
    // Login tokens, codes and states in public-service URLs never reach a span.
    Layer.provide(service === "public" ? layerRedactCredentialQuery : Layer.empty),
    Layer.provide(Layer.succeed(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(config.http.maxBodyBytes)))
  )

/** Every selected service's server; requires the shared Authenticator, Health, `ServerDrain` and `TelemetryRuntime`. */
export const layer = (config: ResolvedConfig, services: ReadonlyArray<ServiceId>, tls: TlsMaterial | undefined) =>
  services
    .map((service) => serverLayer(config, service, tls))
    .reduce((all, one) => Layer.merge(all, one), Layer.empty)
    // One event-loop sampler for every server's `/livez`.
    .pipe(Layer.provide(EventLoopLag.layer))
