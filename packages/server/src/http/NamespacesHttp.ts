/** Handlers of the namespace group (spec 4.1) on the api and the admin-api. */
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { NamespacesApi } from "@svc/domain/http/NamespacesApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Namespaces } from "../resources/Namespaces.ts"
import { withActor } from "./WithActor.ts"

const handlers = (h: HttpApiBuilder.Handlers.FromGroup<typeof NamespacesApi>) =>
  Effect.map(Namespaces, (svc) =>
    h
      .handle("create", ({ payload }) => withActor((a) => svc.create(a, payload)))
      .handle("list", ({ query }) => withActor((a) => svc.list(a, query)))
      .handle("get", ({ params }) => withActor((a) => svc.get(a, params.path)))
      .handle("update", ({ params, payload }) => withActor((a) => svc.update(a, params.path, payload)))
      .handle("delete", ({ params }) => withActor((a) => svc.remove(a, params.path)))
  )

export const ApiNamespacesHttp = HttpApiBuilder.group(ApiV1, "namespaces", handlers)

export const AdminApiNamespacesHttp = HttpApiBuilder.group(AdminApiV1, "namespaces", handlers)
