/**
 * Webhook delivery storage (API-CONVENTIONS "Webhooks to the host"): the fan-out of outbox events
 * to the matching endpoints, the claim of due deliveries under a lease (a worker that dies
 * mid-delivery loses its lease and another worker sends again: at least once), the outcome of an
 * attempt, the delivery log, redelivery, the test event, and the retention of old entries.
 */
import { type OutboxEvent, subscriptionMatches, type WebhookSubscription } from "@svc/domain/Webhook"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { jsonb } from "./ResourceRepo.ts"
import {
  type AttemptOutcome,
  type DeliveryIds,
  type DeliveryRow,
  type DisabledEndpoint,
  type DueDelivery,
  decodeDeliveries,
  decodeDue,
  decodeEvents,
  decodeSubscriptions,
  type WebhookNotice
} from "./WebhookRows.ts"

export type {
  AttemptOutcome,
  DeliveryIds,
  DeliveryRow,
  DisabledEndpoint,
  DueDelivery,
  WebhookNotice
} from "./WebhookRows.ts"

export class WebhookRepo extends Context.Service<
  WebhookRepo,
  {
    /**
     * Fans up to `limit` undispatched events out to the live enabled endpoints they match (one
     * transaction; concurrent fan-outs skip each other's rows); the number of events handled.
     */
    readonly fanOut: (limit: number, now: Date, ids: () => DeliveryIds) => Effect.Effect<number, SqlError>
    /**
     * Leases up to `limit` due pending deliveries until `leaseUntil`, soonest first, so that no
     * endpoint has more than `perEndpoint` in flight counting the caller's `inFlight` (by endpoint id).
     */
    readonly claimDue: (
      now: Date,
      leaseUntil: Date,
      limit: number,
      perEndpoint: number,
      inFlight: Readonly<Record<string, number>>
    ) => Effect.Effect<ReadonlyArray<DueDelivery>, SqlError>
    /** Records an attempt and releases the lease; the endpoint's failing-since clock follows the outcome. */
    readonly recordAttempt: (id: string, outcome: AttemptOutcome, now: Date) => Effect.Effect<void, SqlError>
    /**
     * Marks enabled endpoints failing since before `cutoff` as `disabled` and, in the same
     * transaction, raises on each the namespace-level notice `notice` makes (at most one active
     * per endpoint and key); their ids and namespaces.
     */
    readonly disableFailing: (
      cutoff: Date,
      now: Date,
      notice: (endpoint: DisabledEndpoint) => WebhookNotice
    ) => Effect.Effect<ReadonlyArray<{ readonly id: string; readonly namespace: string }>, SqlError>
    /** One page of an endpoint's log, newest first, after the `(createdAt, id)` of `after`. */
    readonly list: (
      webhookId: string,
      options: {
        readonly limit: number
        readonly state?: string | undefined
        readonly after?: { readonly createdAt: Date; readonly id: string } | undefined
      }
    ) => Effect.Effect<ReadonlyArray<DeliveryRow>, SqlError>
    readonly find: (webhookId: string, deliveryId: string) => Effect.Effect<DeliveryRow | undefined, SqlError>
    /** Makes a delivery pending again (same message id), due now, with a fresh attempt count. */
    readonly redeliver: (
      webhookId: string,
      deliveryId: string,
      now: Date
    ) => Effect.Effect<DeliveryRow | undefined, SqlError>
    /** Writes a `webhook.test` event addressed to one endpoint and its delivery, due now. */
    readonly createTest: (
      webhook: { readonly id: string; readonly namespace: string },
      ids: DeliveryIds,
      now: Date
    ) => Effect.Effect<void, SqlError>
    /** Live endpoints' sealed secrets with id greater than `afterId`, by id (the re-encryption sweep). */
    readonly secretsPage: (
      afterId: string | undefined,
      limit: number
    ) => Effect.Effect<
      ReadonlyArray<{ readonly id: string; readonly namespace: string; readonly secretEnc: string }>,
      SqlError
    >
    /** Compare-and-swap of an endpoint's sealed secret; false when it changed meanwhile (a rotation). */
    readonly swapSecret: (id: string, expected: string, next: string) => Effect.Effect<boolean, SqlError>
    /** Deletes finished deliveries and dispatched events older than `before`. */
    readonly purge: (before: Date) => Effect.Effect<void, SqlError>
  }
>()("@svc/sql/WebhookRepo") {
  static readonly layer: Layer.Layer<WebhookRepo, never, SqlClient.SqlClient> = Layer.effect(
    WebhookRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const fanOut = Effect.fn("WebhookRepo.fanOut")(function* (limit: number, now: Date, ids: () => DeliveryIds) {
        return yield* sql.withTransaction(
          Effect.gen(function* () {
            const events = yield* decodeEvents(
              yield* sql`
                SELECT seq, type, namespace, labels, webhook_id FROM webhook_events
                WHERE dispatched_at IS NULL ORDER BY seq LIMIT ${limit} FOR UPDATE SKIP LOCKED`
            ).pipe(Effect.orDie)
            if (events.length === 0) return 0
            const endpoints = yield* decodeSubscriptions(
              yield* sql`
                SELECT id, namespace, events, label_selector FROM webhooks
                WHERE deleted_at IS NULL AND state = 'enabled'`
            ).pipe(Effect.orDie)
            const rows: Array<Record<string, unknown>> = []
            for (const event of events) {
              const outbox: OutboxEvent = event
              for (const endpoint of endpoints) {
                const subscription: WebhookSubscription = endpoint
                const addressed = event.webhookId === null ? subscriptionMatches(subscription, outbox) : false
                if (!addressed) continue
                const fresh = ids()
                rows.push({
                  id: fresh.id,
                  webhookId: endpoint.id,
                  namespace: endpoint.namespace,
                  eventSeq: String(event.seq),
                  messageId: fresh.messageId,
                  eventType: event.type,
                  state: "pending",
                  attempts: 0,
                  nextAttemptAt: now,
                  createdAt: now,
                  updatedAt: now
                })
              }
            }
            for (let i = 0; i < rows.length; i += 500) {
              const [first, ...rest] = rows.slice(i, i + 500)
              if (first === undefined) break
              yield* sql`INSERT INTO webhook_deliveries ${sql.insert([first, ...rest])}
                ON CONFLICT (webhook_id, event_seq) DO NOTHING`
            }
            const seqs = events.map((event) => String(event.seq))
            yield* sql`UPDATE webhook_events SET dispatched_at = ${now} WHERE seq IN ${sql.in(seqs)}`
            return events.length
          })
        )
      })

      const claimDue = Effect.fn("WebhookRepo.claimDue")(function* (
        now: Date,
        leaseUntil: Date,
        limit: number,
        perEndpoint: number,
        inFlight: Readonly<Record<string, number>>
      ) {
        const busy = Object.entries(inFlight)
          .filter(([, n]) => n >= perEndpoint)
          .map(([id]) => id)
        const rows = yield* sql`
          WITH candidates AS (
            SELECT d.id, d.webhook_id, d.next_attempt_at FROM webhook_deliveries d
            JOIN webhooks w ON w.id = d.webhook_id AND w.deleted_at IS NULL AND w.state = 'enabled'
            WHERE d.state = 'pending' AND d.next_attempt_at <= ${now}
              AND (d.lease_until IS NULL OR d.lease_until <= ${now})
              ${busy.length === 0 ? sql`` : sql`AND d.webhook_id NOT IN ${sql.in(busy)}`}
            ORDER BY d.next_attempt_at, d.id
            LIMIT ${limit * 4}
            FOR UPDATE OF d SKIP LOCKED
          ),
          ranked AS (
            SELECT id, next_attempt_at,
              row_number() OVER (PARTITION BY webhook_id ORDER BY next_attempt_at, id)
                + coalesce((${jsonb(inFlight)}::jsonb ->> webhook_id)::int, 0) AS n
            FROM candidates
          ),
          chosen AS (
            SELECT id FROM ranked WHERE n <= ${perEndpoint} ORDER BY next_attempt_at, id LIMIT ${limit}
          ),
          leased AS (
            UPDATE webhook_deliveries d SET lease_until = ${leaseUntil}
            FROM chosen WHERE d.id = chosen.id
            RETURNING d.id, d.webhook_id, d.namespace, d.message_id, d.event_type, d.event_seq, d.attempts
          )
          SELECT l.id, l.webhook_id, l.namespace, l.message_id, l.event_type, l.event_seq, l.attempts,
            e.data AS event_data, e.created_at AS event_created_at, w.url, w.secret_enc, w.failing_since
          FROM leased l
          JOIN webhook_events e ON e.seq = l.event_seq
          JOIN webhooks w ON w.id = l.webhook_id AND w.deleted_at IS NULL AND w.state = 'enabled'`
        const decoded = yield* decodeDue(rows).pipe(Effect.orDie)
        return decoded.map((row) => ({ ...row, eventSeq: String(row.eventSeq) }))
      })

      const recordAttempt = Effect.fn("WebhookRepo.recordAttempt")(function* (
        id: string,
        outcome: AttemptOutcome,
        now: Date
      ) {
        yield* sql.withTransaction(
          Effect.gen(function* () {
            const updated =
              outcome._tag === "Succeeded"
                ? yield* sql<{ webhookId: string }>`
                    UPDATE webhook_deliveries SET state = 'succeeded', attempts = attempts + 1,
                      last_status_code = ${outcome.statusCode}, last_error = NULL, next_attempt_at = NULL,
                      lease_until = NULL, updated_at = ${now}
                    WHERE id = ${id} RETURNING webhook_id`
                : yield* sql<{ webhookId: string }>`
                    UPDATE webhook_deliveries SET
                      state = ${outcome.retryAt === undefined ? "failed" : "pending"},
                      attempts = attempts + 1, last_status_code = ${outcome.statusCode},
                      last_error = ${outcome.error.slice(0, 500)}, next_attempt_at = ${outcome.retryAt ?? null},
                      lease_until = NULL, updated_at = ${now}
                    WHERE id = ${id} RETURNING webhook_id`
            const webhookId = updated[0]?.webhookId
            if (webhookId === undefined) return
            if (outcome._tag === "Succeeded") {
              yield* sql`UPDATE webhooks SET failing_since = NULL WHERE id = ${webhookId} AND failing_since IS NOT NULL`
            } else {
              yield* sql`UPDATE webhooks SET failing_since = ${now} WHERE id = ${webhookId} AND failing_since IS NULL`
            }
          })
        )
      })

      const disableFailing = (cutoff: Date, now: Date, notice: (endpoint: DisabledEndpoint) => WebhookNotice) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              const disabled = yield* sql<{ id: string; namespace: string; name: string; failingSince: Date }>`
                UPDATE webhooks SET state = 'disabled', updated_at = ${now}
                WHERE deleted_at IS NULL AND state = 'enabled' AND failing_since IS NOT NULL
                  AND failing_since <= ${cutoff}
                RETURNING id, namespace, name, failing_since`
              for (const endpoint of disabled) {
                const raised = notice({ ...endpoint, failingSince: new Date(endpoint.failingSince) })
                const row = {
                  id: raised.id,
                  webhookId: endpoint.id,
                  namespace: endpoint.namespace,
                  key: raised.key,
                  level: raised.level,
                  title: raised.title,
                  message: raised.message,
                  actionUrl: raised.actionUrl,
                  metadata: jsonb(raised.metadata),
                  createdAt: now,
                  updatedAt: now
                }
                yield* sql`INSERT INTO notifications ${sql.insert(row)}
                  ON CONFLICT (webhook_id, key) WHERE resolved_at IS NULL AND webhook_id IS NOT NULL DO NOTHING`
              }
              return disabled.map(({ id, namespace }) => ({ id, namespace }))
            })
          )
          .pipe(Effect.withSpan("WebhookRepo.disableFailing"))

      const list = Effect.fn("WebhookRepo.list")(function* (
        webhookId: string,
        options: {
          readonly limit: number
          readonly state?: string | undefined
          readonly after?: { readonly createdAt: Date; readonly id: string } | undefined
        }
      ) {
        const rows = yield* sql`
          SELECT id, webhook_id, message_id, event_type, state, attempts, last_status_code, last_error,
            next_attempt_at, created_at
          FROM webhook_deliveries
          WHERE webhook_id = ${webhookId}
            ${options.state === undefined ? sql`` : sql`AND state = ${options.state}`}
            ${
              options.after === undefined
                ? sql``
                : sql`AND (created_at, id) < (${options.after.createdAt}, ${options.after.id})`
            }
          ORDER BY created_at DESC, id DESC
          LIMIT ${options.limit}`
        return yield* decodeDeliveries(rows).pipe(Effect.orDie)
      })

      const find = Effect.fn("WebhookRepo.find")(function* (webhookId: string, deliveryId: string) {
        const rows = yield* sql`
          SELECT id, webhook_id, message_id, event_type, state, attempts, last_status_code, last_error,
            next_attempt_at, created_at
          FROM webhook_deliveries WHERE webhook_id = ${webhookId} AND id = ${deliveryId}`
        return (yield* decodeDeliveries(rows).pipe(Effect.orDie))[0]
      })

      const redeliver = Effect.fn("WebhookRepo.redeliver")(function* (
        webhookId: string,
        deliveryId: string,
        now: Date
      ) {
        yield* sql`
          UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ${now},
            lease_until = NULL, updated_at = ${now}
          WHERE webhook_id = ${webhookId} AND id = ${deliveryId}`
        return yield* find(webhookId, deliveryId)
      })

      const createTest = Effect.fn("WebhookRepo.createTest")(function* (
        webhook: { readonly id: string; readonly namespace: string },
        ids: DeliveryIds,
        now: Date
      ) {
        yield* sql.withTransaction(
          Effect.gen(function* () {
            const data = { webhook_id: webhook.id, namespace: webhook.namespace }
            const inserted = yield* sql<{ seq: string | number }>`
              INSERT INTO webhook_events (type, namespace, labels, data, webhook_id, created_at, dispatched_at)
              VALUES ('webhook.test', ${webhook.namespace}, ${jsonb({})}, ${jsonb(data)}, ${webhook.id}, ${now}, ${now})
              RETURNING seq`
            const seq = String(inserted[0]?.seq)
            yield* sql`INSERT INTO webhook_deliveries ${sql.insert({
              id: ids.id,
              webhookId: webhook.id,
              namespace: webhook.namespace,
              eventSeq: seq,
              messageId: ids.messageId,
              eventType: "webhook.test",
              state: "pending",
              attempts: 0,
              nextAttemptAt: now,
              createdAt: now,
              updatedAt: now
            })}`
          })
        )
      })

      const purge = Effect.fn("WebhookRepo.purge")(function* (before: Date) {
        yield* sql`DELETE FROM webhook_deliveries WHERE state <> 'pending' AND updated_at < ${before}`
        // A deleted endpoint's deliveries are never sent.
        yield* sql`
          DELETE FROM webhook_deliveries d USING webhooks w
          WHERE w.id = d.webhook_id AND w.deleted_at IS NOT NULL AND w.deleted_at < ${before}`
        yield* sql`
          DELETE FROM webhook_events e WHERE e.dispatched_at IS NOT NULL AND e.created_at < ${before}
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = e.seq)`
      })

      const secretsPage = Effect.fn("WebhookRepo.secretsPage")(function* (afterId: string | undefined, limit: number) {
        return yield* sql<{ id: string; namespace: string; secretEnc: string }>`
          SELECT id, namespace, secret_enc FROM webhooks
          WHERE deleted_at IS NULL ${afterId === undefined ? sql`` : sql`AND id > ${afterId}`}
          ORDER BY id LIMIT ${limit}`
      })

      const swapSecret = Effect.fn("WebhookRepo.swapSecret")(function* (id: string, expected: string, next: string) {
        const rows = yield* sql`
          UPDATE webhooks SET secret_enc = ${next}
          WHERE id = ${id} AND deleted_at IS NULL AND secret_enc = ${expected} RETURNING 1 AS swapped`
        return rows.length > 0
      })

      return WebhookRepo.of({
        secretsPage,
        swapSecret,
        fanOut,
        claimDue,
        recordAttempt,
        disableFailing,
        list,
        find,
        redeliver,
        createTest,
        purge
      })
    })
  )
}
