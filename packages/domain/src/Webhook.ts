/**
 * Webhooks to the host (API-CONVENTIONS "Webhooks to the host"): the namespace-scoped endpoint
 * resource, the event types it subscribes to, the Standard Webhooks signature, the delivery log
 * entry and the default retry schedule. Pure.
 */
import { Result, Schema } from "effect"
import { UserAnnotations, UserLabels } from "./Labels.ts"
import { NamespacePath, pathMatches } from "./PermissionMatcher.ts"
import { envelopeFields, ResourceName } from "./Resource.ts"
import { formatSelectorProblem, matches, parseSelector } from "./Selector.ts"

/** Every event type an endpoint may receive. */
export const webhookEventTypes = [
  "connection.created",
  "connection.configured",
  "connection.health_changed",
  "connection.reauthorization_required",
  "connection.setup_required",
  "connection.disconnected",
  "connection.migrated",
  "connection.cool_down_started",
  "task.completed",
  "task.failed",
  "webhook.test"
] as const
export const WebhookEventType = Schema.Literals(webhookEventTypes)
export type WebhookEventType = typeof WebhookEventType.Type

/** A label selector given as text, checked by the selector parser (spec 2.6). */
export const SelectorText = Schema.String.check(
  Schema.makeFilter((text: string) =>
    Result.match(parseSelector(text), {
      onSuccess: () => true as const,
      onFailure: (problems) => problems.map(formatSelectorProblem).join("; ")
    })
  )
)

/** An endpoint URL: absolute `http:` or `https:`, at most 2048 characters, no credentials in it. */
export const WebhookUrl = Schema.String.check(
  Schema.isMaxLength(2048),
  Schema.makeFilter((text: string) => {
    if (!URL.canParse(text)) return "expected an absolute http: or https: URL"
    const url = new URL(text)
    if (url.protocol !== "http:" && url.protocol !== "https:") return "expected an absolute http: or https: URL"
    if (url.username !== "" || url.password !== "") return "a webhook URL carries no user name or password"
    return true
  })
)

/** The endpoint's delivery state: `disabled` after failing for `webhooks.disable_after`. */
export const WebhookState = Schema.Literals(["enabled", "disabled"])
export type WebhookState = typeof WebhookState.Type

/** A webhook endpoint as returned (never its secret). */
export const Webhook = Schema.Struct({
  ...envelopeFields,
  url: Schema.String,
  events: Schema.Array(WebhookEventType),
  label_selector: Schema.NullOr(Schema.String),
  description: Schema.NullOr(Schema.String),
  state: WebhookState
}).annotate({ identifier: "Webhook" })
export type Webhook = typeof Webhook.Type

/** The answer of a create and of `_rotate_secret`: the only places the secret is shown. */
export const WebhookWithSecret = Schema.Struct({
  ...Webhook.fields,
  secret: Schema.String
}).annotate({ identifier: "WebhookWithSecret" })
export type WebhookWithSecret = typeof WebhookWithSecret.Type

/** `POST /api/v1/webhooks`; `events` absent means every event type. */
export const CreateWebhook = Schema.Struct({
  namespace: NamespacePath,
  name: Schema.optionalKey(ResourceName),
  url: WebhookUrl,
  events: Schema.optionalKey(Schema.Array(WebhookEventType).check(Schema.isMinLength(1))),
  label_selector: Schema.optionalKey(SelectorText),
  description: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(1000))),
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations)
}).annotate({ identifier: "CreateWebhook" })
export type CreateWebhook = typeof CreateWebhook.Type

/** `PATCH /api/v1/webhooks/{id}`: omitted fields stay; `state: enabled` re-enables a disabled endpoint. */
export const UpdateWebhook = Schema.Struct({
  namespace: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(ResourceName),
  url: Schema.optionalKey(WebhookUrl),
  events: Schema.optionalKey(Schema.Array(WebhookEventType).check(Schema.isMinLength(1))),
  label_selector: Schema.optionalKey(Schema.NullOr(SelectorText)),
  description: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isMaxLength(1000)))),
  state: Schema.optionalKey(WebhookState),
  labels: Schema.optionalKey(UserLabels),
  annotations: Schema.optionalKey(UserAnnotations)
}).annotate({ identifier: "UpdateWebhook" })
export type UpdateWebhook = typeof UpdateWebhook.Type

/** A delivery's state in the log. */
export const WebhookDeliveryState = Schema.Literals(["pending", "succeeded", "failed"])
export type WebhookDeliveryState = typeof WebhookDeliveryState.Type

/** One entry of `GET /api/v1/webhooks/{id}/deliveries`. */
export const WebhookDelivery = Schema.Struct({
  id: Schema.String,
  event_type: WebhookEventType,
  webhook_id: Schema.String,
  state: WebhookDeliveryState,
  attempts: Schema.Number,
  last_status_code: Schema.NullOr(Schema.Number),
  last_error: Schema.NullOr(Schema.String),
  next_attempt_at: Schema.NullOr(Schema.String),
  created_at: Schema.String
}).annotate({ identifier: "WebhookDelivery" })
export type WebhookDelivery = typeof WebhookDelivery.Type

/** The default retry schedule: the waits before the 2nd, 3rd, … attempt; then the delivery is `failed`. */
export const defaultRetrySchedule: ReadonlyArray<string> = ["5s", "5m", "30m", "2h", "5h", "10h", "10h"]

/** The Standard Webhooks signed content: `<id>.<timestamp>.<body>`. */
export const signedContent = (messageId: string, timestampSeconds: number, body: string): string =>
  `${messageId}.${timestampSeconds}.${body}`

/** What an endpoint's subscription is matched against. */
export interface WebhookSubscription {
  readonly namespace: string
  /** `null`: every event type. */
  readonly events: ReadonlyArray<string> | null
  readonly labelSelector: string | null
}

/** An outbox event as the fan-out sees it. */
export interface OutboxEvent {
  readonly type: string
  readonly namespace: string
  readonly labels: Readonly<Record<string, string>>
}

/**
 * True when an endpoint receives `event`: the event's namespace is the endpoint's or below it,
 * its type is subscribed, and the subject's labels match the endpoint's selector. An unparsable
 * stored selector matches nothing.
 */
export const subscriptionMatches = (subscription: WebhookSubscription, event: OutboxEvent): boolean => {
  if (!pathMatches(subscription.namespace, true, event.namespace)) return false
  if (subscription.events !== null && !subscription.events.includes(event.type)) return false
  if (subscription.labelSelector === null || subscription.labelSelector.trim() === "") return true
  const selector = parseSelector(subscription.labelSelector)
  return Result.isSuccess(selector) && matches(selector.success, event.labels)
}
