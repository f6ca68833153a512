/** Handlers of the notification routes on the api and admin-api (spec 4.4). */
import { AdminApiV1, ApiV1, PublicApi } from "@svc/domain/http/Apis"
import type { NotificationsApi } from "@svc/domain/http/NotificationsApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Notifications } from "../resources/Notifications.ts"
import { withActor } from "./WithActor.ts"

const notifications = (h: HttpApiBuilder.Handlers.FromGroup<typeof NotificationsApi>) =>
  Effect.map(Notifications, (svc) =>
    h
      .handle("list", ({ query }) =>
        withActor((a) =>
          svc.list(a, { includeViewed: query.include_viewed ?? false, limit: query.limit, cursor: query.cursor })
        )
      )
      .handle("markViewed", ({ params }) => withActor((a) => svc.markViewed(a, params.id)))
      .handle("markViewedBulk", ({ payload }) => withActor((a) => svc.markViewedBulk(a, payload.ids)))
  )

/** The notification group of the api service. */
export const ApiNotificationsHttp = HttpApiBuilder.group(ApiV1, "notifications", notifications)

/** The notification group of the admin-api service. */
export const AdminApiNotificationsHttp = HttpApiBuilder.group(AdminApiV1, "notifications", notifications)

/** The notification group of the public service (browser sessions). */
export const PublicNotificationsHttp = HttpApiBuilder.group(PublicApi, "notifications", notifications)
