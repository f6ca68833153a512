/**
 * Connection notifications (spec 2.10, 2.11, 4.4; API-CONVENTIONS "Reading the spec" and "Tasks
 * and notifications"): snake_case fields, one active notice per (connection, key), and the
 * built-in required-action notices with their severity order. Pure.
 */
import { Schema } from "effect"

/** Notification levels; the spec shows `warning`, `info` and `error` complete the set. */
export const NotificationLevel = Schema.Literals(["info", "warning", "error"])
export type NotificationLevel = typeof NotificationLevel.Type

/** A notice key: 1–128 of `[A-Za-z0-9._-]`, starting alphanumeric; `svc.` keys are the service's own. */
export const NotificationKey = Schema.String.check(
  Schema.makeFilter((value: string) => /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(value), {
    message:
      "a notification key is 1 to 128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit"
  })
)

const actionUrlRule = "an action_url is an absolute http: or https: URL, or a path starting with a single /"

/**
 * Why `url` may not be stored as a notice's `action_url` (SECURITY.md: data handed to browsers is
 * inert), or `undefined`: an absolute `http:`/`https:` URL, or a path starting with `/` (not `//`);
 * no whitespace, control character or backslash anywhere (browsers drop or reinterpret them).
 */
export const actionUrlProblem = (url: string): string | undefined => {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (url.length === 0 || /[\u0000-\u0020\u007f-\u00a0\\]/.test(url)) return actionUrlRule
  if (url.startsWith("/")) return url.startsWith("//") ? actionUrlRule : undefined
  if (!URL.canParse(url)) return actionUrlRule
  const protocol = new URL(url).protocol
  return protocol === "https:" || protocol === "http:" ? undefined : actionUrlRule
}

/** A notice's `action_url` as stored: at most 2048 characters, {@link actionUrlProblem} finds nothing. */
export const ActionUrl = Schema.String.check(
  Schema.isMaxLength(2048),
  Schema.makeFilter((url: string) => actionUrlProblem(url) ?? true)
)

/**
 * `action_url` as svc stores and lists it: the URL when {@link actionUrlProblem} finds nothing,
 * else null (inputs are refused when decoded; this keeps a row written before the check inert).
 */
export const storedActionUrl = (url: string | null | undefined): string | null =>
  url === null || url === undefined || actionUrlProblem(url) !== undefined ? null : url

/** Free-form metadata of a notice (a JSON object). */
export const NotificationMetadata = Schema.Record(Schema.String, Schema.Unknown)
export type NotificationMetadata = typeof NotificationMetadata.Type

/** A notice as raised (spec 2.10 `notifications.set` entry): keyed per connection. */
export const NotificationInput = Schema.Struct({
  key: NotificationKey,
  level: NotificationLevel,
  title: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)),
  message: Schema.String.check(Schema.isMaxLength(2000)),
  action_url: Schema.optionalKey(ActionUrl),
  metadata: Schema.optionalKey(NotificationMetadata)
})
export type NotificationInput = typeof NotificationInput.Type

/** A listed notification: `viewed` is for the caller, `can_action` whether the caller may act (spec 2.11). */
export const Notification = Schema.Struct({
  id: Schema.String,
  key: Schema.String,
  level: NotificationLevel,
  title: Schema.String,
  message: Schema.String,
  action_url: Schema.NullOr(Schema.String),
  metadata: NotificationMetadata,
  viewed: Schema.Boolean,
  can_action: Schema.Boolean,
  created_at: Schema.String
}).annotate({ identifier: "Notification" })
export type Notification = typeof Notification.Type

/** `GET /api/v1/notifications`: newest first; `cursor` is absent on the last page. */
export const NotificationList = Schema.Struct({
  items: Schema.Array(Notification),
  cursor: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "NotificationList" })
export type NotificationList = typeof NotificationList.Type

/** Most ids one bulk `_viewed` call accepts. */
export const maxBulkViewed = 1000

/** `POST /api/v1/notifications/_viewed`: 1–1000 ids; unknown or invisible ids are ignored. */
export const MarkViewed = Schema.Struct({
  ids: Schema.Array(Schema.String).check(Schema.isMinLength(1), Schema.isMaxLength(maxBulkViewed))
}).annotate({ identifier: "MarkViewed" })
export type MarkViewed = typeof MarkViewed.Type

/** Key of the built-in re-authentication notice (spec 2.11). */
export const reauthKey = "svc.reauth"
/** Key of the built-in setup notice (spec 2.11). */
export const setupKey = "svc.setup"

/** spec 2.11: the built-in required-action keys, most severe first (re-authentication before setup). */
export const requiredActionKeys: ReadonlyArray<string> = [reauthKey, setupKey]

/** Keys reserved for the service's own notices (connector hooks may not raise them). */
export const isBuiltInKey = (key: string): boolean => key.startsWith("svc.")

/** `/connections/{id}?action=reauth`: the connection needs re-authentication (spec 2.11). */
export const reauthNotice = (connectionId: string): NotificationInput => ({
  key: reauthKey,
  level: "warning",
  title: "Re-authentication required",
  message: "This connection needs to be authorised again before it can be used.",
  action_url: `/connections/${connectionId}?action=reauth`,
  metadata: {}
})

/** `/connections/{id}?action=configure`: the connection needs more setup (spec 2.11). */
export const setupNotice = (connectionId: string): NotificationInput => ({
  key: setupKey,
  level: "warning",
  title: "Setup required",
  message: "This connection needs more configuration before it can be used.",
  action_url: `/connections/${connectionId}?action=configure`,
  metadata: {}
})

/** The key of the namespace-level notice raised when a webhook endpoint is auto-disabled (issue 34). */
export const webhookDisabledKey = "svc.webhook_disabled"

/**
 * The notice of an endpoint that `webhooks.disable_after` disabled: shown to the namespace's
 * actors who may read the endpoint; its action (the admin UI's webhooks screen) is re-enabling
 * it, which resolves the notice. Names, never the URL or the secret.
 */
export const webhookDisabledNotice = (webhook: {
  readonly id: string
  readonly name: string
  readonly failingSince: Date
}): NotificationInput => ({
  key: webhookDisabledKey,
  level: "warning",
  title: "Webhook endpoint disabled",
  message: `Webhook endpoint ${webhook.name} kept failing since ${webhook.failingSince.toISOString()} and was disabled; re-enable it once the receiver works again.`,
  action_url: "/ui/#webhooks",
  metadata: { webhook_id: webhook.id, failing_since: webhook.failingSince.toISOString() }
})

/** What raising a notice under `key` does to the connection's other required-action notices. */
export interface SeverityRule {
  /** Less severe active notices this one resolves. */
  readonly supersedes: ReadonlyArray<string>
  /** More severe notices whose being active means this one is not raised. */
  readonly blockedBy: ReadonlyArray<string>
}

/**
 * spec 2.11: at most one required-action notice per connection; a more severe one resolves the
 * less severe and blocks it from being raised. Other keys are independent.
 */
export const severityRule = (key: string): SeverityRule => {
  const rank = requiredActionKeys.indexOf(key)
  return rank === -1
    ? { supersedes: [], blockedBy: [] }
    : { supersedes: requiredActionKeys.slice(rank + 1), blockedBy: requiredActionKeys.slice(0, rank) }
}
