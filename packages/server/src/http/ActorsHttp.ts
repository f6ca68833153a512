/** Handlers of the actor group (spec 4.1) on the api and the admin-api. */
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { ActorsApi } from "@svc/domain/http/ActorsApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Actors } from "../resources/Actors.ts"
import { withActor } from "./WithActor.ts"

const handlers = (h: HttpApiBuilder.Handlers.FromGroup<typeof ActorsApi>) =>
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

export const ApiActorsHttp = HttpApiBuilder.group(ApiV1, "actors", handlers)

export const AdminApiActorsHttp = HttpApiBuilder.group(AdminApiV1, "actors", handlers)
