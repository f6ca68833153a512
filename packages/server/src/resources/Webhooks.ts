/**
 * Webhook endpoint operations (API-CONVENTIONS "Webhooks to the host"): CRUD like every
 * namespace-scoped resource, the signing secret sealed like credentials and shown only on create
 * and rotation, the `webhook.test` event, the delivery log and redelivery.
 */
import { randomBytes } from "node:crypto"
import { BadRequest, NotFound } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { makeId } from "@svc/domain/Ids"
import type {
  CreateWebhook,
  UpdateWebhook,
  Webhook,
  WebhookDelivery,
  WebhookDeliveryState,
  WebhookWithSecret
} from "@svc/domain/Webhook"
import { defaultPageSize } from "@svc/domain/Resource"
import { jsonb } from "@svc/sql/ResourceRepo"
import type { WebhookRow } from "@svc/sql/Rows"
import { type DeliveryRow, WebhookRepo } from "@svc/sql/WebhookRepo"
import { Context, DateTime, Effect, Layer } from "effect"
import { Encryption } from "../crypto/Encryption.ts"
import { type ListPage, type ListRequest, Listing } from "./Listing.ts"
import * as Present from "./Presenters.ts"
import * as Kinds from "./ResourceKinds.ts"
import { orDie, type ResourceError, ResourceOps } from "./ResourceOps.ts"

/** A fresh endpoint secret, `whsec_<base64 of 32 random bytes>` (Standard Webhooks). */
export const makeWebhookSecret = (): string => `whsec_${randomBytes(32).toString("base64")}`

/** Where an endpoint's secret is sealed: the row and column bind the ciphertext (AAD). */
export const secretContext = (row: { readonly id: string; readonly namespace: string }) => ({
  table: "webhooks",
  column: "secret",
  rowId: row.id,
  namespace: row.namespace
})

/** One page of the delivery log. */
export interface DeliveryPage {
  readonly items: ReadonlyArray<WebhookDelivery>
  readonly cursor?: string
}

const deliveryOf = (row: DeliveryRow): WebhookDelivery => ({
  id: row.id,
  event_type: row.eventType as WebhookDelivery["event_type"],
  webhook_id: row.messageId,
  state: row.state,
  attempts: row.attempts,
  last_status_code: row.lastStatusCode,
  last_error: row.lastError,
  next_attempt_at: row.nextAttemptAt === null ? null : row.nextAttemptAt.toISOString(),
  created_at: row.createdAt.toISOString()
})

const invalidCursor = new BadRequest({ error: "the cursor is not valid for this list", code: "invalid_cursor" })

const encodeCursor = (row: DeliveryRow) =>
  Buffer.from(JSON.stringify({ c: row.createdAt.toISOString(), i: row.id })).toString("base64url")

const decodeCursor = (text: string): { readonly createdAt: Date; readonly id: string } | undefined => {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, "base64url").toString("utf8"))
    if (typeof value !== "object" || value === null) return undefined
    const { c, i } = value as { c?: unknown; i?: unknown }
    if (typeof c !== "string" || typeof i !== "string") return undefined
    const createdAt = new Date(c)
    return Number.isNaN(createdAt.getTime()) ? undefined : { createdAt, id: i }
  } catch {
    return undefined
  }
}

export class Webhooks extends Context.Service<
  Webhooks,
  {
    readonly create: (actor: AuthenticatedActor, body: CreateWebhook) => Effect.Effect<WebhookWithSecret, ResourceError>
    readonly list: (actor: AuthenticatedActor, query: ListRequest) => Effect.Effect<ListPage<Webhook>, BadRequest>
    readonly get: (actor: AuthenticatedActor, id: string) => Effect.Effect<Webhook, ResourceError>
    readonly update: (
      actor: AuthenticatedActor,
      id: string,
      body: UpdateWebhook
    ) => Effect.Effect<Webhook, ResourceError>
    readonly remove: (actor: AuthenticatedActor, id: string) => Effect.Effect<void, ResourceError>
    readonly rotateSecret: (actor: AuthenticatedActor, id: string) => Effect.Effect<WebhookWithSecret, ResourceError>
    readonly test: (
      actor: AuthenticatedActor,
      id: string
    ) => Effect.Effect<{ readonly delivery_id: string; readonly webhook_id: string }, ResourceError>
    readonly deliveries: (
      actor: AuthenticatedActor,
      id: string,
      query: {
        readonly limit?: number | undefined
        readonly cursor?: string | undefined
        readonly state?: WebhookDeliveryState | undefined
      }
    ) => Effect.Effect<DeliveryPage, ResourceError>
    readonly redeliver: (
      actor: AuthenticatedActor,
      id: string,
      deliveryId: string
    ) => Effect.Effect<WebhookDelivery, ResourceError>
  }
>()("@svc/server/Webhooks") {
  static readonly layerNoDeps: Layer.Layer<Webhooks, never, ResourceOps | Listing | Encryption | WebhookRepo> =
    Layer.effect(
      Webhooks,
      Effect.gen(function* () {
        const ops = yield* ResourceOps
        const listing = yield* Listing
        const encryption = yield* Encryption
        const repo = yield* WebhookRepo
        const nowDate = Effect.map(DateTime.now, (now) => new Date(DateTime.toEpochMillis(now)))
        const withSecret = (row: WebhookRow, secret: string): WebhookWithSecret => ({
          ...Present.webhook(row),
          secret
        })
        const namespaceImmutable = new BadRequest({
          error: "a webhook's namespace cannot change; create a new endpoint and delete this one",
          code: "namespace_immutable",
          details: [{ field: "body.namespace", message: "cannot be changed" }]
        })

        return Webhooks.of({
          create: (actor, body) =>
            Effect.gen(function* () {
              const id = makeId("wh")
              yield* ops.authorizeCreate(actor, Kinds.webhooks, body.namespace)
              const secret = makeWebhookSecret()
              const secretEnc = yield* encryption.encrypt(secretContext({ id, namespace: body.namespace }), secret)
              const row = yield* ops.create(actor, Kinds.webhooks, {
                id,
                namespace: body.namespace,
                name: body.name,
                labels: body.labels,
                annotations: body.annotations,
                columns: {
                  url: body.url,
                  events: body.events === undefined ? null : jsonb([...new Set(body.events)]),
                  labelSelector: body.label_selector ?? null,
                  description: body.description ?? null,
                  secretEnc,
                  state: "enabled"
                }
              })
              return withSecret(row, secret)
            }),
          list: (actor, query) => listing.list(actor, Kinds.webhooks, query, Present.webhook),
          get: (actor, id) => Effect.map(ops.load(actor, Kinds.webhooks, id, "get"), Present.webhook),
          update: (actor, id, body) => {
            const columns: Record<string, unknown> = {}
            if (body.url !== undefined) columns.url = body.url
            if (body.events !== undefined) columns.events = jsonb([...new Set(body.events)])
            if (body.label_selector !== undefined) columns.labelSelector = body.label_selector
            if (body.description !== undefined) columns.description = body.description
            if (body.state !== undefined) {
              columns.state = body.state
              // Re-enabling starts the failure clock afresh.
              if (body.state === "enabled") columns.failingSince = null
            }
            return Effect.map(
              ops.update(
                actor,
                Kinds.webhooks,
                id,
                { name: body.name, labels: body.labels, annotations: body.annotations, columns },
                (row) =>
                  body.namespace !== undefined && body.namespace !== row.namespace
                    ? Effect.fail(namespaceImmutable)
                    : Effect.void
              ),
              Present.webhook
            )
          },
          remove: (actor, id) => Effect.asVoid(ops.remove(actor, Kinds.webhooks, id)),
          rotateSecret: (actor, id) =>
            Effect.gen(function* () {
              const current = yield* ops.load(actor, Kinds.webhooks, id, "update")
              const secret = makeWebhookSecret()
              const secretEnc = yield* encryption.encrypt(secretContext(current), secret)
              const row = yield* ops.update(actor, Kinds.webhooks, id, { columns: { secretEnc } })
              return withSecret(row, secret)
            }),
          test: (actor, id) =>
            Effect.gen(function* () {
              const row = yield* ops.load(actor, Kinds.webhooks, id, "update")
              const ids = { id: makeId("whd"), messageId: makeId("msg") }
              yield* orDie(repo.createTest(row, ids, yield* nowDate))
              return { delivery_id: ids.id, webhook_id: ids.messageId }
            }),
          deliveries: (actor, id, query) =>
            Effect.gen(function* () {
              const row = yield* ops.load(actor, Kinds.webhooks, id, "get")
              const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor)
              if (query.cursor !== undefined && after === undefined) return yield* invalidCursor
              const limit = query.limit ?? defaultPageSize
              const rows = yield* orDie(repo.list(row.id, { limit: limit + 1, state: query.state, after }))
              const page = rows.slice(0, limit)
              const last = page[page.length - 1]
              return rows.length > limit && last !== undefined
                ? { items: page.map(deliveryOf), cursor: encodeCursor(last) }
                : { items: page.map(deliveryOf) }
            }),
          redeliver: (actor, id, deliveryId) =>
            Effect.gen(function* () {
              const row = yield* ops.load(actor, Kinds.webhooks, id, "update")
              const delivery = yield* orDie(repo.redeliver(row.id, deliveryId, yield* nowDate))
              if (delivery === undefined) {
                return yield* new NotFound({ error: `delivery ${deliveryId} not found`, code: "not_found" })
              }
              return deliveryOf(delivery)
            })
        })
      })
    )
}
