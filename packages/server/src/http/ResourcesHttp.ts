/**
 * Handlers of the resource groups (namespaces, actors, connectors, connections, keys, rate
 * limits). Each group is declared once in the domain and served by both the api and the
 * admin-api, so one builder per group registers on both declarations.
 */
import type { ActorsApi } from "@svc/domain/http/ActorsApi"
import { AdminApiV1, ApiV1, PublicApi } from "@svc/domain/http/Apis"
import type { ConnectionsApi } from "@svc/domain/http/ConnectionsApi"
import type { ConnectorsApi } from "@svc/domain/http/ConnectorsApi"
import type { KeysApi } from "@svc/domain/http/KeysApi"
import type { NamespacesApi } from "@svc/domain/http/NamespacesApi"
import type { RateLimitsApi } from "@svc/domain/http/RateLimitsApi"
import { type AuthenticatedActor, CurrentActor } from "@svc/domain/http/Security"
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Actors } from "../services/Actors.ts"
import { ConnectionDisconnect } from "../services/ConnectionDisconnect.ts"
import { Connections } from "../services/Connections.ts"
import { ConnectionSetup } from "../services/ConnectionSetup.ts"
import { Connectors } from "../services/Connectors.ts"
import { Keys } from "../services/Keys.ts"
import { Namespaces } from "../services/Namespaces.ts"
import { RateLimits } from "../services/RateLimits.ts"

/** Runs `f` with the authenticated caller of the request. */
export const withActor = <A, E, R>(f: (actor: AuthenticatedActor) => Effect.Effect<A, E, R>) =>
  Effect.flatMap(CurrentActor, f)

const namespaces = (h: HttpApiBuilder.Handlers.FromGroup<typeof NamespacesApi>) =>
  Effect.map(Namespaces, (svc) =>
    h
      .handle("create", ({ payload }) => withActor((a) => svc.create(a, payload)))
      .handle("list", ({ query }) => withActor((a) => svc.list(a, query)))
      .handle("get", ({ params }) => withActor((a) => svc.get(a, params.path)))
      .handle("update", ({ params, payload }) => withActor((a) => svc.update(a, params.path, payload)))
      .handle("delete", ({ params }) => withActor((a) => svc.remove(a, params.path)))
  )

const actors = (h: HttpApiBuilder.Handlers.FromGroup<typeof ActorsApi>) =>
  Effect.map(Actors, (svc) =>
    h
      .handle("create", ({ payload }) => withActor((a) => svc.create(a, payload)))
      .handle("list", ({ query }) =>
        withActor((a) => svc.list(a, { ...query, equals: { externalId: query.externalId } }))
      )
      .handle("get", ({ params }) => withActor((a) => svc.get(a, params.id)))
      .handle("update", ({ params, payload }) => withActor((a) => svc.update(a, params.id, payload)))
      .handle("delete", ({ params }) => withActor((a) => svc.remove(a, params.id)))
  )

const connectors = (h: HttpApiBuilder.Handlers.FromGroup<typeof ConnectorsApi>) =>
  Effect.map(Connectors, (svc) =>
    h
      .handle("create", ({ payload }) => withActor((a) => svc.create(a, payload)))
      .handle("list", ({ query }) =>
        withActor((a) => svc.list(a, { ...query, equals: { state: query.state, type: query.type } }))
      )
      .handle("get", ({ params }) => withActor((a) => svc.get(a, params.id)))
      .handle("update", ({ params, payload }) => withActor((a) => svc.update(a, params.id, payload)))
      .handle("createVersion", ({ params, payload }) =>
        withActor((a) => svc.createVersion(a, params.id, payload.definition))
      )
      .handle("listVersions", ({ params }) => withActor((a) => svc.versions(a, params.id)))
      .handle("getVersion", ({ params }) => withActor((a) => svc.version(a, params.id, params.version)))
      .handle("setVersionState", ({ params, payload }) =>
        withActor((a) => svc.setVersionState(a, params.id, params.version, payload.state))
      )
  )

const connections = (h: HttpApiBuilder.Handlers.FromGroup<typeof ConnectionsApi>) =>
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

const keys = (h: HttpApiBuilder.Handlers.FromGroup<typeof KeysApi>) =>
  Effect.map(Keys, (svc) =>
    h
      .handle("create", ({ payload }) => withActor((a) => svc.create(a, payload)))
      .handle("list", ({ query }) => withActor((a) => svc.list(a, query)))
      .handle("get", ({ params }) => withActor((a) => svc.get(a, params.id)))
      .handle("update", ({ params, payload }) => withActor((a) => svc.update(a, params.id, payload)))
      .handle("delete", ({ params }) => withActor((a) => svc.remove(a, params.id)))
      .handle("rotate", ({ params }) => withActor((a) => svc.rotate(a, params.id)))
  )

const rateLimits = (h: HttpApiBuilder.Handlers.FromGroup<typeof RateLimitsApi>) =>
  Effect.map(RateLimits, (svc) =>
    h
      .handle("create", ({ payload }) => withActor((a) => svc.create(a, payload)))
      .handle("list", ({ query }) =>
        withActor((a) => {
          const { label_selector, ...rest } = query
          return svc.list(a, { ...rest, labelSelector: label_selector })
        })
      )
      .handle("get", ({ params }) => withActor((a) => svc.get(a, params.id)))
      .handle("update", ({ params, payload }) => withActor((a) => svc.update(a, params.id, payload)))
      .handle("delete", ({ params }) => withActor((a) => svc.remove(a, params.id)))
  )

/** The resource groups of the api service. */
export const ApiResourcesHttp = Layer.mergeAll(
  HttpApiBuilder.group(ApiV1, "namespaces", namespaces),
  HttpApiBuilder.group(ApiV1, "actors", actors),
  HttpApiBuilder.group(ApiV1, "connectors", connectors),
  HttpApiBuilder.group(ApiV1, "connections", connections),
  HttpApiBuilder.group(ApiV1, "keys", keys),
  HttpApiBuilder.group(ApiV1, "rateLimits", rateLimits)
)

/** The resource groups the public service serves to browser sessions (marketplace). */
export const PublicResourcesHttp = Layer.mergeAll(
  HttpApiBuilder.group(PublicApi, "connectors", connectors),
  HttpApiBuilder.group(PublicApi, "connections", connections)
)

/** The resource groups of the admin-api service. */
export const AdminApiResourcesHttp = Layer.mergeAll(
  HttpApiBuilder.group(AdminApiV1, "namespaces", namespaces),
  HttpApiBuilder.group(AdminApiV1, "actors", actors),
  HttpApiBuilder.group(AdminApiV1, "connectors", connectors),
  HttpApiBuilder.group(AdminApiV1, "connections", connections),
  HttpApiBuilder.group(AdminApiV1, "keys", keys),
  HttpApiBuilder.group(AdminApiV1, "rateLimits", rateLimits)
)
