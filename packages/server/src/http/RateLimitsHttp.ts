/** Handlers of the rate-limit group (spec 2.8, 4.1) on the api and the admin-api. */
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { RateLimitsApi } from "@svc/domain/http/RateLimitsApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { RateLimits } from "../resources/RateLimits.ts"
import { withActor } from "./WithActor.ts"

const handlers = (h: HttpApiBuilder.Handlers.FromGroup<typeof RateLimitsApi>) =>
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

export const ApiRateLimitsHttp = HttpApiBuilder.group(ApiV1, "rateLimits", handlers)

export const AdminApiRateLimitsHttp = HttpApiBuilder.group(AdminApiV1, "rateLimits", handlers)
