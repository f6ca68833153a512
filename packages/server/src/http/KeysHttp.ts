/** Handlers of the key group (spec 4.1) on the api and the admin-api. */
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { KeysApi } from "@svc/domain/http/KeysApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Keys } from "../resources/Keys.ts"
import { withActor } from "./WithActor.ts"

const handlers = (h: HttpApiBuilder.Handlers.FromGroup<typeof KeysApi>) =>
  Effect.map(Keys, (svc) =>
    h
      .handle("create", ({ payload }) => withActor((a) => svc.create(a, payload)))
      .handle("list", ({ query }) => withActor((a) => svc.list(a, query)))
      .handle("get", ({ params }) => withActor((a) => svc.get(a, params.id)))
      .handle("update", ({ params, payload }) => withActor((a) => svc.update(a, params.id, payload)))
      .handle("delete", ({ params }) => withActor((a) => svc.remove(a, params.id)))
      .handle("rotate", ({ params }) => withActor((a) => svc.rotate(a, params.id)))
  )

export const ApiKeysHttp = HttpApiBuilder.group(ApiV1, "keys", handlers)

export const AdminApiKeysHttp = HttpApiBuilder.group(AdminApiV1, "keys", handlers)
