/** Webhook endpoints (API-CONVENTIONS "Webhooks to the host"): CRUD, secret rotation, test event, delivery log. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Limit, Page } from "../Resource.ts"
import {
  CreateWebhook,
  UpdateWebhook,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryState,
  WebhookWithSecret
} from "../Webhook.ts"
import { listQuery, permission, resourceErrors } from "./Endpoints.ts"
import { Authentication, RequiredPermission } from "./Security.ts"

const params = { id: Schema.String }

// Like rate limits, the selector filter of this list is spelled `label_selector`.
const { labelSelector, ...commonQuery } = listQuery
const webhookQuery = { ...commonQuery, label_selector: labelSelector }

/** The answer of `_test`: the delivery that carries the `webhook.test` event. */
export const WebhookTestSent = Schema.Struct({ delivery_id: Schema.String, webhook_id: Schema.String }).annotate({
  identifier: "WebhookTestSent"
})

export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(
    HttpApiEndpoint.post("create", "/api/v1/webhooks", {
      payload: CreateWebhook,
      success: WebhookWithSecret.pipe(HttpApiSchema.status(201)),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("webhooks", "create"))
      .annotate(
        OpenApi.Description,
        "Creates a webhook endpoint; the answer carries its signing secret, shown only here and after _rotate_secret."
      ),
    HttpApiEndpoint.get("list", "/api/v1/webhooks", {
      query: webhookQuery,
      success: Page(Webhook),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("webhooks", "list"))
      .annotate(OpenApi.Description, "Lists webhook endpoints the caller may see."),
    HttpApiEndpoint.get("get", "/api/v1/webhooks/:id", { params, success: Webhook, error: resourceErrors })
      .annotate(RequiredPermission, permission("webhooks", "get"))
      .annotate(OpenApi.Description, "One webhook endpoint (never its secret)."),
    HttpApiEndpoint.patch("update", "/api/v1/webhooks/:id", {
      params,
      payload: UpdateWebhook,
      success: Webhook,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("webhooks", "update"))
      .annotate(
        OpenApi.Description,
        "Changes the URL, events, selector, description, state, name, labels or annotations; omitted fields stay."
      ),
    HttpApiEndpoint.delete("delete", "/api/v1/webhooks/:id", {
      params,
      success: HttpApiSchema.NoContent,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("webhooks", "delete"))
      .annotate(OpenApi.Description, "Deletes a webhook endpoint; its pending deliveries are not sent."),
    HttpApiEndpoint.post("rotateSecret", "/api/v1/webhooks/:id/_rotate_secret", {
      params,
      success: WebhookWithSecret,
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("webhooks", "update"))
      .annotate(
        OpenApi.Description,
        "Replaces the signing secret; every later attempt is signed with the new secret only."
      ),
    HttpApiEndpoint.post("test", "/api/v1/webhooks/:id/_test", {
      params,
      success: WebhookTestSent.pipe(HttpApiSchema.status(202)),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("webhooks", "update"))
      .annotate(OpenApi.Description, "Queues a webhook.test event to this endpoint."),
    HttpApiEndpoint.get("deliveries", "/api/v1/webhooks/:id/deliveries", {
      params,
      query: {
        limit: Schema.optionalKey(Limit),
        cursor: Schema.optionalKey(Schema.String),
        state: Schema.optionalKey(WebhookDeliveryState)
      },
      success: Page(WebhookDelivery),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("webhooks", "get"))
      .annotate(OpenApi.Description, "The endpoint's delivery log, newest first."),
    HttpApiEndpoint.post("redeliver", "/api/v1/webhooks/:id/deliveries/:deliveryId/_redeliver", {
      params: { id: Schema.String, deliveryId: Schema.String },
      success: WebhookDelivery.pipe(HttpApiSchema.status(202)),
      error: resourceErrors
    })
      .annotate(RequiredPermission, permission("webhooks", "update"))
      .annotate(
        OpenApi.Description,
        "Sends a delivery again (same webhook-id): it becomes pending with a fresh retry schedule."
      )
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Webhooks") {}
