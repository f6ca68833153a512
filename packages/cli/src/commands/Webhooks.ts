/**
 * `cli webhooks list|create|delete|deliveries|redeliver|test|rotate-secret` (docs/webhooks.md):
 * the webhook endpoints of the api through the typed client. The signing secret is printed only
 * by `create` and `rotate-secret`, the only answers that carry it.
 */
import { Console, Effect, Option } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { NamespaceFilterParam, NamespacePath } from "@svc/domain/Resource"
import { LabelSelector } from "@svc/domain/Selector"
import {
  SelectorText,
  type Webhook,
  type WebhookDelivery,
  WebhookDeliveryState,
  webhookEventTypes,
  WebhookUrl
} from "@svc/domain/Webhook"
import { apiFlags, connectApi, validateApiFlags } from "../ApiClient.ts"
import { toApiFailure } from "../ApiFailure.ts"
import { type Column, formatJsonArray, formatTable, outputFlag, shortTime } from "../Output.ts"
import { root } from "../Root.ts"

/** Columns of `webhooks list -o table`. */
export const webhookColumns: ReadonlyArray<Column<Webhook>> = [
  { header: "ID", value: (w) => w.id },
  { header: "NAME", value: (w) => w.name },
  { header: "NAMESPACE", value: (w) => w.namespace },
  { header: "URL", value: (w) => w.url },
  { header: "STATE", value: (w) => w.state },
  { header: "EVENTS", value: (w) => w.events.join(",") },
  { header: "CREATED", value: (w) => shortTime(w.createdAt) }
]

/** Columns of `webhooks deliveries -o table`. */
export const deliveryColumns: ReadonlyArray<Column<WebhookDelivery>> = [
  { header: "ID", value: (d) => d.id },
  { header: "EVENT", value: (d) => d.event_type },
  { header: "WEBHOOK-ID", value: (d) => d.webhook_id },
  { header: "STATE", value: (d) => d.state },
  { header: "ATTEMPTS", value: (d) => String(d.attempts) },
  { header: "LAST", value: (d) => (d.last_status_code === null ? (d.last_error ?? "-") : String(d.last_status_code)) },
  { header: "NEXT", value: (d) => (d.next_attempt_at === null ? "-" : shortTime(d.next_attempt_at)) },
  { header: "CREATED", value: (d) => shortTime(d.created_at) }
]

const idArgument = Argument.String("webhookId").pipe(Argument.withDescription("The endpoint id (wh_…)"))

const print = <A>(format: "json" | "table", items: ReadonlyArray<A>, columns: ReadonlyArray<Column<A>>) =>
  format === "json"
    ? Console.log(formatJsonArray(items))
    : Effect.forEach(formatTable(columns, items), (line) => Console.log(line), { discard: true })

const list = Command.make(
  "list",
  {
    namespace: Flag.String("namespace").pipe(
      Flag.withDescription("Only endpoints in this namespace, or its subtree with root.acme.**"),
      Flag.withSchema(NamespaceFilterParam),
      Flag.optional
    ),
    selector: Flag.String("selector").pipe(
      Flag.withAlias("l"),
      Flag.withDescription("Only endpoints whose labels match this selector"),
      Flag.withSchema(LabelSelector),
      Flag.optional
    ),
    output: outputFlag(["json", "table"], "table"),
    ...apiFlags
  },
  Effect.fn("WebhooksList")(function* (flags) {
    const { config } = yield* root
    const { client, target } = yield* connectApi(flags, config)
    const items: Array<Webhook> = []
    let cursor: string | undefined
    do {
      const page = yield* client.webhooks
        .list({
          query: {
            limit: 1000,
            ...(cursor === undefined
              ? {
                  ...(Option.isSome(flags.namespace) ? { namespace: flags.namespace.value } : {}),
                  ...(Option.isSome(flags.selector) ? { label_selector: flags.selector.value } : {})
                }
              : { cursor })
          }
        })
        .pipe(Effect.mapError(toApiFailure(target.apiUrl, "list webhooks")))
      items.push(...page.items)
      cursor = page.cursor
    } while (cursor !== undefined)
    yield* print(flags.output, items, webhookColumns)
  })
).pipe(
  Command.validate((flags) => validateApiFlags(flags)),
  Command.withDescription("List the webhook endpoints the token may see (never their secrets)")
)

const create = Command.make(
  "create",
  {
    namespace: Flag.String("namespace").pipe(
      Flag.withDescription("The endpoint's namespace: it receives events of this namespace and below"),
      Flag.withSchema(NamespacePath)
    ),
    url: Flag.String("url").pipe(
      Flag.withDescription("Where events are POSTed (http or https)"),
      Flag.withSchema(WebhookUrl)
    ),
    events: Flag.Literals("event", webhookEventTypes).pipe(
      Flag.withDescription("An event type to receive (repeatable; default every type)"),
      Flag.atLeast(0)
    ),
    selector: Flag.String("selector").pipe(
      Flag.withAlias("l"),
      Flag.withDescription("Only events of connections whose labels match this selector"),
      Flag.withSchema(SelectorText),
      Flag.optional
    ),
    name: Flag.String("name").pipe(Flag.withDescription("The endpoint's name"), Flag.optional),
    ...apiFlags
  },
  Effect.fn("WebhooksCreate")(function* (flags) {
    const { config } = yield* root
    const { client, target } = yield* connectApi(flags, config)
    const created = yield* client.webhooks
      .create({
        payload: {
          namespace: flags.namespace,
          url: flags.url,
          ...(flags.events.length === 0 ? {} : { events: flags.events }),
          ...(Option.isSome(flags.selector) ? { label_selector: flags.selector.value } : {}),
          ...(Option.isSome(flags.name) ? { name: flags.name.value } : {})
        }
      })
      .pipe(Effect.mapError(toApiFailure(target.apiUrl, "create webhook")))
    yield* Console.log(JSON.stringify(created, null, 2))
  })
).pipe(
  Command.validate((flags) => validateApiFlags(flags)),
  Command.withDescription("Create a webhook endpoint; prints it with its signing secret (shown only now)"),
  Command.withExamples([
    {
      command:
        "cli webhooks create --namespace root.acme --url https://app.example.com/hooks/svc --event connection.health_changed",
      description: "Health changes of root.acme and below"
    }
  ])
)

const remove = Command.make(
  "delete",
  { id: idArgument, ...apiFlags },
  Effect.fn("WebhooksDelete")(function* (flags) {
    const { config } = yield* root
    const { client, target } = yield* connectApi(flags, config)
    yield* client.webhooks
      .delete({ params: { id: flags.id } })
      .pipe(Effect.mapError(toApiFailure(target.apiUrl, `delete webhook ${flags.id}`)))
  })
).pipe(
  Command.validate((flags) => validateApiFlags(flags)),
  Command.withDescription("Delete a webhook endpoint")
)

const deliveries = Command.make(
  "deliveries",
  {
    id: idArgument,
    state: Flag.Literals("state", WebhookDeliveryState.literals).pipe(
      Flag.withDescription("Only deliveries in this state"),
      Flag.optional
    ),
    limit: Flag.Int("limit").pipe(Flag.withDescription("The newest N deliveries (1-1000)"), Flag.withDefault(50)),
    output: outputFlag(["json", "table"], "table"),
    ...apiFlags
  },
  Effect.fn("WebhooksDeliveries")(function* (flags) {
    const { config } = yield* root
    const { client, target } = yield* connectApi(flags, config)
    const page = yield* client.webhooks
      .deliveries({
        params: { id: flags.id },
        query: {
          limit: Math.max(1, Math.min(1000, flags.limit)),
          ...(Option.isSome(flags.state) ? { state: flags.state.value } : {})
        }
      })
      .pipe(Effect.mapError(toApiFailure(target.apiUrl, `list deliveries of ${flags.id}`)))
    yield* print(flags.output, page.items, deliveryColumns)
  })
).pipe(
  Command.validate((flags) => validateApiFlags(flags)),
  Command.withDescription("The delivery log of an endpoint, newest first: state, attempts, last status")
)

const redeliver = Command.make(
  "redeliver",
  {
    id: idArgument,
    deliveryId: Argument.String("deliveryId").pipe(Argument.withDescription("The delivery id (whd_…)")),
    ...apiFlags
  },
  Effect.fn("WebhooksRedeliver")(function* (flags) {
    const { config } = yield* root
    const { client, target } = yield* connectApi(flags, config)
    const delivery = yield* client.webhooks
      .redeliver({ params: { id: flags.id, deliveryId: flags.deliveryId } })
      .pipe(Effect.mapError(toApiFailure(target.apiUrl, `redeliver ${flags.deliveryId}`)))
    yield* Console.log(JSON.stringify(delivery, null, 2))
  })
).pipe(
  Command.validate((flags) => validateApiFlags(flags)),
  Command.withDescription("Send a delivery again (same webhook-id) with a fresh retry schedule")
)

const test = Command.make(
  "test",
  { id: idArgument, ...apiFlags },
  Effect.fn("WebhooksTest")(function* (flags) {
    const { config } = yield* root
    const { client, target } = yield* connectApi(flags, config)
    const sent = yield* client.webhooks
      .test({ params: { id: flags.id } })
      .pipe(Effect.mapError(toApiFailure(target.apiUrl, `test webhook ${flags.id}`)))
    yield* Console.log(JSON.stringify(sent, null, 2))
  })
).pipe(
  Command.validate((flags) => validateApiFlags(flags)),
  Command.withDescription("Queue a webhook.test event to an endpoint")
)

const rotateSecret = Command.make(
  "rotate-secret",
  { id: idArgument, ...apiFlags },
  Effect.fn("WebhooksRotateSecret")(function* (flags) {
    const { config } = yield* root
    const { client, target } = yield* connectApi(flags, config)
    const rotated = yield* client.webhooks
      .rotateSecret({ params: { id: flags.id } })
      .pipe(Effect.mapError(toApiFailure(target.apiUrl, `rotate the secret of ${flags.id}`)))
    yield* Console.log(JSON.stringify(rotated, null, 2))
  })
).pipe(
  Command.validate((flags) => validateApiFlags(flags)),
  Command.withDescription("Replace an endpoint's signing secret; prints the new one (shown only now)")
)

/** `cli webhooks …`. */
export const webhooks = Command.make("webhooks").pipe(
  Command.withDescription("Webhook endpoints that receive connection and task events (docs/webhooks.md)"),
  Command.withExamples([{ command: "cli webhooks list -o table", description: "The endpoints the token may see" }]),
  Command.withSubcommands([list, create, remove, deliveries, redeliver, test, rotateSecret])
)
