/** Handlers of the connection group (spec 4.1–4.4) on the api, the admin-api and the public service. */
import { AdminApiV1, ApiV1, PublicApi } from "@svc/domain/http/Apis"
import type { ConnectionsApi } from "@svc/domain/http/ConnectionsApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Lifecycle } from "../connections/Lifecycle.ts"
import { Connections } from "../connections/Connections.ts"
import { ConnectionReauth } from "../connections/ConnectionReauth.ts"
import { ConnectionSetup } from "../connections/ConnectionSetup.ts"
import { Migrations } from "../connections/Migrations.ts"
import { withConnection } from "./ResourceIds.ts"
import { withActor } from "./WithActor.ts"

const handlers = (h: HttpApiBuilder.Handlers.FromGroup<typeof ConnectionsApi>) =>
  Effect.map(
    Effect.all([Connections, ConnectionSetup, ConnectionReauth, Lifecycle, Migrations]),
    ([svc, setup, reauth, lifecycle, migrations]) =>
      h
        .handle("create", ({ payload }) => withActor((a) => svc.create(a, payload)))
        .handle("list", ({ query }) =>
          withActor((a) => svc.list(a, { ...query, equals: { state: query.state, connectorId: query.connectorId } }))
        )
        .handle("get", ({ params }) => withConnection(params.id, (a, id) => svc.get(a, id)))
        .handle("update", ({ params, payload }) => withConnection(params.id, (a, id) => svc.update(a, id, payload)))
        .handle("replaceCredentials", ({ params, payload }) =>
          withConnection(params.id, (a, id) => svc.replaceCredentials(a, id, payload.credentials))
        )
        .handle("initiate", ({ payload }) => withActor((a) => setup.initiate(a, payload)))
        .handle("setupProgress", ({ params }) => withConnection(params.id, (a, id) => setup.progress(a, id)))
        .handle("submitSetupStep", ({ params, payload }) =>
          withConnection(params.id, (a, id) => reauth.submit(a, id, payload))
        )
        .handle("reauthorize", ({ params, payload }) =>
          withConnection(params.id, (a, id) => reauth.reauthorize(a, id, payload.returnToUrl))
        )
        .handle("disconnect", ({ params, payload }) =>
          withConnection(params.id, (a, id) => lifecycle.disconnect(a, id, payload))
        )
        .handle("migrateVersion", ({ params, payload }) =>
          withConnection(params.id, (a, id) => migrations.migrate(a, id, payload))
        )
  )

export const ApiConnectionsHttp = HttpApiBuilder.group(ApiV1, "connections", handlers)

export const AdminApiConnectionsHttp = HttpApiBuilder.group(AdminApiV1, "connections", handlers)

export const PublicConnectionsHttp = HttpApiBuilder.group(PublicApi, "connections", handlers)
