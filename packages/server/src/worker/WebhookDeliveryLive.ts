/**
 * Webhook delivery on the worker (API-CONVENTIONS "Webhooks to the host"): one cluster singleton
 * runs the delivery loop; the SQL leases of the deliveries keep a second sender (a singleton that
 * moved while the old owner was still finishing) from sending what is in flight.
 */
import { WebhookDeliverySingleton } from "@svc/domain/DurableNames"
import { Effect, type Layer } from "effect"
import { type Sharding, Singleton } from "effect/cluster"
import { WebhookDelivery } from "../events/WebhookDelivery.ts"

export const layerNoDeps: Layer.Layer<never, never, WebhookDelivery | Sharding.Sharding> = Singleton.make(
  WebhookDeliverySingleton,
  Effect.flatMap(WebhookDelivery, (delivery) => delivery.run)
)
