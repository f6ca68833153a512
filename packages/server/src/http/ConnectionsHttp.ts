/** Handlers of the connection group (spec 4.1–4.4) on the api, the admin-api and the public service. */
import { AdminApiV1, ApiV1, PublicApi } from "@svc/domain/http/Apis"
import type { ConnectionsApi } from "@svc/domain/http/ConnectionsApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { ConnectionDisconnect } from "../connections/ConnectionDisconnect.ts"
import { Connections } from "../connections/Connections.ts"
import { ConnectionSetup } from "../connections/ConnectionSetup.ts"
import { withActor } from "./WithActor.ts"

const handlers = (h: HttpApiBuilder.Handlers.FromGroup<typeof ConnectionsApi>) =>
  Effect.map(Effect.all([Connections, ConnectionSetup, ConnectionDisconnect]), ([svc, setup, disconnects]) =>
    h
      .handle("create", ({ payload }) => withActor((a) => svc.create(a, payload)))
      .handle("list", ({ query }) =>
        withActor((a) => svc.list(a, { ...query, equals: { state: query.state, connectorId: query.connectorId } }))
      )
      .handle("get", ({ params }) => withActor((a) => svc.get(a, params.id)))
      .handle("update", ({ params, payload }) => withActor((a) => svc.update(a, params.id, payload)))
      .handle("replaceCredentials", ({ params, payload }) =>
        withActor((a) => svc.replaceCredentials(a, params.id, payload.credentials))
      )
      .handle("initiate", ({ payload }) => withActor((a) => setup.initiate(a, payload)))
      .handle("setupProgress", ({ params }) => withActor((a) => setup.progress(a, params.id)))
      .handle("submitSetupStep", ({ params, payload }) => withActor((a) => setup.submit(a, params.id, payload)))
      .handle("reauthorize", ({ params, payload }) =>
        withActor((a) => setup.reauthorize(a, params.id, payload.returnToUrl))
      )
      .handle("disconnect", ({ params }) => withActor((a) => disconnects.disconnect(a, params.id)))
  )

export const ApiConnectionsHttp = HttpApiBuilder.group(ApiV1, "connections", handlers)

export const AdminApiConnectionsHttp = HttpApiBuilder.group(AdminApiV1, "connections", handlers)

export const PublicConnectionsHttp = HttpApiBuilder.group(PublicApi, "connections", handlers)
