/**
 * The rows of webhook delivery storage (`WebhookRepo`): what its queries return and take, and the
 * decoders of the rows they read.
 */
import type { NotificationLevel } from "@svc/domain/Notification"
import { Schema } from "effect"

/** An endpoint `disableFailing` disabled. */
export interface DisabledEndpoint {
  readonly id: string
  readonly namespace: string
  readonly name: string
  readonly failingSince: Date
}

/** The notice raised on a disabled endpoint; `id` is used only when a new row is inserted. */
export interface WebhookNotice {
  readonly id: string
  readonly key: string
  readonly level: NotificationLevel
  readonly title: string
  readonly message: string
  readonly actionUrl: string | null
  readonly metadata: Record<string, unknown>
}

/** A delivery ready to send: the event, the endpoint's URL and sealed secret. */
export interface DueDelivery {
  readonly id: string
  readonly webhookId: string
  readonly namespace: string
  readonly messageId: string
  readonly eventType: string
  readonly eventSeq: string
  readonly eventData: Record<string, unknown>
  readonly eventCreatedAt: Date
  readonly attempts: number
  readonly url: string
  readonly secretEnc: string
  readonly failingSince: Date | null
}

/** A delivery log entry. */
export interface DeliveryRow {
  readonly id: string
  readonly webhookId: string
  readonly messageId: string
  readonly eventType: string
  readonly state: "pending" | "succeeded" | "failed"
  readonly attempts: number
  readonly lastStatusCode: number | null
  readonly lastError: string | null
  readonly nextAttemptAt: Date | null
  readonly createdAt: Date
}

/** The outcome of one attempt. */
export type AttemptOutcome =
  | { readonly _tag: "Succeeded"; readonly statusCode: number }
  | {
      readonly _tag: "Failed"
      readonly statusCode: number | null
      readonly error: string
      /** When to try again; undefined: the schedule is exhausted, the delivery is `failed`. */
      readonly retryAt: Date | undefined
    }

const DeliveryRowSchema = Schema.Struct({
  id: Schema.String,
  webhookId: Schema.String,
  messageId: Schema.String,
  eventType: Schema.String,
  state: Schema.Literals(["pending", "succeeded", "failed"]),
  attempts: Schema.Number,
  lastStatusCode: Schema.NullOr(Schema.Number),
  lastError: Schema.NullOr(Schema.String),
  nextAttemptAt: Schema.NullOr(Schema.Date),
  createdAt: Schema.Date
})
export const decodeDeliveries = Schema.decodeUnknownEffect(Schema.Array(DeliveryRowSchema))

const DueRowSchema = Schema.Struct({
  id: Schema.String,
  webhookId: Schema.String,
  namespace: Schema.String,
  messageId: Schema.String,
  eventType: Schema.String,
  eventSeq: Schema.Unknown,
  eventData: Schema.Record(Schema.String, Schema.Unknown),
  eventCreatedAt: Schema.Date,
  attempts: Schema.Number,
  url: Schema.String,
  secretEnc: Schema.String,
  failingSince: Schema.NullOr(Schema.Date)
})
export const decodeDue = Schema.decodeUnknownEffect(Schema.Array(DueRowSchema))

const SubscriptionRow = Schema.Struct({
  id: Schema.String,
  namespace: Schema.String,
  events: Schema.NullOr(Schema.Array(Schema.String)),
  labelSelector: Schema.NullOr(Schema.String)
})
export const decodeSubscriptions = Schema.decodeUnknownEffect(Schema.Array(SubscriptionRow))

const EventRow = Schema.Struct({
  seq: Schema.Unknown,
  type: Schema.String,
  namespace: Schema.String,
  labels: Schema.Record(Schema.String, Schema.String),
  webhookId: Schema.NullOr(Schema.String)
})
export const decodeEvents = Schema.decodeUnknownEffect(Schema.Array(EventRow))

/** Fresh ids for one delivery (`whd_…`) and its message (`msg_…`). */
export interface DeliveryIds {
  readonly id: string
  readonly messageId: string
}
