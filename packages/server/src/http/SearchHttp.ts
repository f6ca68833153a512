/** Handler of `GET /api/v1/search/resources` on the admin-api (spec 4.1). */
import { AdminApiV1 } from "@svc/domain/http/Apis"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Search } from "../resources/Search.ts"
import { withActor } from "./WithActor.ts"

export const AdminApiSearchHttp = HttpApiBuilder.group(AdminApiV1, "search", (h) =>
  Effect.map(Search, (svc) => h.handle("resources", ({ query }) => withActor((actor) => svc.resources(actor, query))))
)
