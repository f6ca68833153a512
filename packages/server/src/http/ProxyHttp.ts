/**
 * The cold door of `_proxy` and `_proxy_raw` on the api and admin-api (spec 4.2; docs/proxy.md
 * "Two doors"): the HttpApi handlers. The router's bearer middleware authenticated the caller;
 * the data plane loads the connection's target and hands the request to the one exchange. A caller
 * authenticated here is remembered, so its next requests may take the warm door.
 */
import { NodeHttpServerRequest } from "@effect/platform-node"
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { ProxyApi } from "@svc/domain/http/ProxyApi"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { Effect } from "effect"
import { HttpServerResponse, type HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { IncomingMessage, ServerResponse } from "node:http"
import { DataPlane } from "../proxy/DataPlane.ts"
import { ProxyCallers } from "../proxy/ProxyCallers.ts"
import { CurrentService } from "./CurrentService.ts"
import { withActor } from "./WithActor.ts"

const proxy = (h: HttpApiBuilder.Handlers.FromGroup<typeof ProxyApi>) =>
  Effect.gen(function* () {
    const plane = yield* DataPlane
    const callers = yield* ProxyCallers
    const service = yield* CurrentService
    /** The caller authenticated for a proxy endpoint: its next requests may take the warm door. */
    const remember = (request: HttpServerRequest.HttpServerRequest, actor: AuthenticatedActor) => {
      const authorization = request.headers.authorization
      if (authorization !== undefined) callers.remember(service, authorization, actor)
    }
    // The raw route writes the streamed answer on the Node response itself; the empty response
    // returned afterwards is ignored by the server because the Node response has ended.
    const raw = ({ params, request }: { params: { id: string }; request: HttpServerRequest.HttpServerRequest }) =>
      withActor((actor) => {
        remember(request, actor)
        return Effect.as(
          plane.proxyRaw(
            actor,
            params.id,
            NodeHttpServerRequest.toIncomingMessage(request) as IncomingMessage,
            NodeHttpServerRequest.toServerResponse(request) as ServerResponse
          ),
          HttpServerResponse.empty()
        )
      })
    return h
      .handle("proxy", ({ params, payload, request }) =>
        withActor((actor) => {
          remember(request, actor)
          return plane.proxy(actor, params.id, payload)
        })
      )
      .handleRaw("rawPost", raw)
      .handleRaw("rawGet", raw)
      .handleRaw("rawPut", raw)
      .handleRaw("rawPatch", raw)
      .handleRaw("rawDelete", raw)
  })

/** The proxy group of the api service. */
export const ApiProxyHttp = HttpApiBuilder.group(ApiV1, "proxy", proxy)

/** The proxy group of the admin-api service. */
export const AdminApiProxyHttp = HttpApiBuilder.group(AdminApiV1, "proxy", proxy)
