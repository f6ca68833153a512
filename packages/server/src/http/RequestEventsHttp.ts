/** Handlers of the request-event routes on the api and admin-api (spec 4.7). */
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { RequestEventsApi } from "@svc/domain/http/RequestEventsApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { RequestEvents } from "../events/RequestEvents.ts"
import { withActor } from "./WithActor.ts"

/** The handlers of the group, for any HttpApi that includes `RequestEventsApi`. */
export const requestEventsHandlers = (h: HttpApiBuilder.Handlers.FromGroup<typeof RequestEventsApi>) =>
  Effect.map(RequestEvents, (svc) =>
    h
      .handle("list", ({ query }) => withActor((a) => svc.list(a, query)))
      .handle("get", ({ params }) => withActor((a) => svc.get(a, params.id)))
      .handle("recording", ({ params }) => withActor((a) => svc.recording(a, params.id)))
  )

/** The request-event group of the api service. */
export const ApiRequestEventsHttp = HttpApiBuilder.group(ApiV1, "requestEvents", requestEventsHandlers)

/** The request-event group of the admin-api service. */
export const AdminApiRequestEventsHttp = HttpApiBuilder.group(AdminApiV1, "requestEvents", requestEventsHandlers)
