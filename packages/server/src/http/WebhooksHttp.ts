/** Handlers of the webhooks group (API-CONVENTIONS "Webhooks to the host") on the api and the admin-api. */
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { WebhooksApi } from "@svc/domain/http/WebhooksApi"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Webhooks } from "../resources/Webhooks.ts"
import { withActor } from "./WithActor.ts"

const handlers = (h: HttpApiBuilder.Handlers.FromGroup<typeof WebhooksApi>) =>
  Effect.map(Webhooks, (svc) =>
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
      .handle("rotateSecret", ({ params }) => withActor((a) => svc.rotateSecret(a, params.id)))
      .handle("test", ({ params }) => withActor((a) => svc.test(a, params.id)))
      .handle("deliveries", ({ params, query }) => withActor((a) => svc.deliveries(a, params.id, query)))
      .handle("redeliver", ({ params }) => withActor((a) => svc.redeliver(a, params.id, params.deliveryId)))
  )

export const ApiWebhooksHttp = HttpApiBuilder.group(ApiV1, "webhooks", handlers)

export const AdminApiWebhooksHttp = HttpApiBuilder.group(AdminApiV1, "webhooks", handlers)
