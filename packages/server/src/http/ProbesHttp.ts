/** Handler of `GET /api/v1/connectors/{connector}/probes/{probe}` on the api and admin-api (spec 4.2). */
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { ProbesApi } from "@svc/domain/http/ProbesApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Probes } from "../connections/Probes.ts"
import { withConnection } from "./ResourceIds.ts"

const probes = (h: HttpApiBuilder.Handlers.FromGroup<typeof ProbesApi>) =>
  Effect.map(Probes, (svc) =>
    h.handle("run", ({ params, query }) =>
      withConnection(query.connectionId, (a, id) => svc.runFor(a, params.connector, params.probe, id))
    )
  )

/** The probe group of the api service. */
export const ApiProbesHttp = HttpApiBuilder.group(ApiV1, "probes", probes)

/** The probe group of the admin-api service. */
export const AdminApiProbesHttp = HttpApiBuilder.group(AdminApiV1, "probes", probes)
