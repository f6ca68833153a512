/** Handlers of `_proxy` and `_proxy_raw` on the api and admin-api (spec 4.2). */
import { NodeHttpServerRequest } from "@effect/platform-node"
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { ProxyApi } from "@svc/domain/http/ProxyApi"
import { Effect } from "effect"
import { HttpServerResponse, type HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type { IncomingMessage, ServerResponse } from "node:http"
import { DataPlane } from "../proxy/DataPlane.ts"
import { withActor } from "./WithActor.ts"

const proxy = (h: HttpApiBuilder.Handlers.FromGroup<typeof ProxyApi>) =>
  Effect.map(DataPlane, (plane) => {
    // The raw route writes the streamed answer on the Node response itself; the empty response
    // returned afterwards is ignored by the server because the Node response has ended.
    const raw = ({ params, request }: { params: { id: string }; request: HttpServerRequest.HttpServerRequest }) =>
      withActor((actor) =>
        Effect.as(
          plane.proxyRaw(
            actor,
            params.id,
            NodeHttpServerRequest.toIncomingMessage(request) as IncomingMessage,
            NodeHttpServerRequest.toServerResponse(request) as ServerResponse
          ),
          HttpServerResponse.empty()
        )
      )
    return h
      .handle("proxy", ({ params, payload }) => withActor((actor) => plane.proxy(actor, params.id, payload)))
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
