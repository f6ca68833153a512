/** Handler of `GET /api/v1/search/resources` on the admin-api (spec 4.1). */
import { AdminApiV1 } from "@svc/domain/http/Apis"
import { CurrentActor } from "@svc/domain/http/Security"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Search } from "../services/Search.ts"

export const AdminApiSearchHttp = HttpApiBuilder.group(AdminApiV1, "search", (h) =>
  Effect.map(Search, (svc) =>
    h.handle("resources", ({ query }) => Effect.flatMap(CurrentActor, (actor) => svc.resources(actor, query)))
  )
)
