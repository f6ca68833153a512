/** Handlers of the connector group (spec 4.1, 4.5) on the api, the admin-api and the public service. */
import { AdminApiV1, ApiV1, PublicApi } from "@svc/domain/http/Apis"
import type { ConnectorsApi } from "@svc/domain/http/ConnectorsApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Lifecycle } from "../connections/Lifecycle.ts"
import { Connectors } from "../resources/Connectors.ts"
import { withConnector } from "./ResourceIds.ts"
import { withActor } from "./WithActor.ts"

const handlers = (h: HttpApiBuilder.Handlers.FromGroup<typeof ConnectorsApi>) =>
  Effect.map(Effect.all([Connectors, Lifecycle]), ([svc, lifecycle]) =>
    h
      .handle("create", ({ payload }) => withActor((a) => svc.create(a, payload)))
      .handle("list", ({ query }) =>
        withActor((a) => svc.list(a, { ...query, equals: { state: query.state, type: query.type } }))
      )
      .handle("get", ({ params }) => withConnector(params.id, (a, id) => svc.get(a, id)))
      .handle("update", ({ params, payload }) => withConnector(params.id, (a, id) => svc.update(a, id, payload)))
      .handle("createVersion", ({ params, payload }) =>
        withConnector(params.id, (a, id) => svc.createVersion(a, id, payload.definition))
      )
      .handle("listVersions", ({ params }) => withConnector(params.id, (a, id) => svc.versions(a, id)))
      .handle("getVersion", ({ params }) => withConnector(params.id, (a, id) => svc.version(a, id, params.version)))
      .handle("setVersionState", ({ params, payload }) =>
        withConnector(params.id, (a, id) => svc.setVersionState(a, id, params.version, payload.state))
      )
      .handle("disconnectAll", ({ params, payload }) =>
        withConnector(params.id, (a, id) => lifecycle.disconnectAll(a, id, payload))
      )
      .handle("archive", ({ params, payload }) =>
        withConnector(params.id, (a, id) => lifecycle.archive(a, id, payload))
      )
  )

export const ApiConnectorsHttp = HttpApiBuilder.group(ApiV1, "connectors", handlers)

export const AdminApiConnectorsHttp = HttpApiBuilder.group(AdminApiV1, "connectors", handlers)

export const PublicConnectorsHttp = HttpApiBuilder.group(PublicApi, "connectors", handlers)
