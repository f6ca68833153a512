/**
 * Delivery of webhook events to host endpoints (API-CONVENTIONS "Webhooks to the host"): the
 * outbox fan-out, leased claims of due deliveries, Standard Webhooks signing, the guarded
 * outbound client (SSRF rules as for upstreams), the retry schedule, a per-endpoint bound on
 * attempts in flight, auto-disable of endpoints that keep failing, and log retention.
 *
 * At least once: a delivery is leased before it is sent and recorded after; a process that dies
 * in between leaves the lease to expire and the delivery is sent again with the same `webhook-id`.
 */
import { createHmac } from "node:crypto"
import { makeId } from "@svc/domain/Ids"
import { storedActionUrl, webhookDisabledNotice } from "@svc/domain/Notification"
import { signedContent } from "@svc/domain/Webhook"
import { type AttemptOutcome, type DueDelivery, WebhookRepo } from "@svc/sql/WebhookRepo"
import { Clock, Context, Effect, FiberSet, Layer, Queue } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { Encryption } from "../crypto/Encryption.ts"
import { Outbound } from "../outbound/Outbound.ts"
import { secretContext } from "../resources/Webhooks.ts"

/** The Standard Webhooks signature header value: `v1,<base64 HMAC-SHA256(secret bytes, id.timestamp.body)>`. */
export const signature = (secret: string, messageId: string, timestampSeconds: number, body: string): string => {
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64")
  const mac = createHmac("sha256", key)
    .update(signedContent(messageId, timestampSeconds, body))
    .digest("base64")
  return `v1,${mac}`
}

/** The JSON body of an event: `{type, timestamp, data}`; `data.sequence` orders one subject's events. */
export const eventBody = (delivery: Pick<DueDelivery, "eventType" | "eventCreatedAt" | "eventData" | "eventSeq">) =>
  JSON.stringify({
    type: delivery.eventType,
    timestamp: delivery.eventCreatedAt.toISOString(),
    data: { ...delivery.eventData, sequence: Number(delivery.eventSeq) }
  })

/** Responses are not read beyond this. */
const maxResponseBytes = 64 * 1024
/** Attempts in flight in one process, across endpoints. */
const maxInFlight = 64
/** Events fanned out per pass. */
const fanOutBatch = 500

export class WebhookDelivery extends Context.Service<
  WebhookDelivery,
  {
    /** Runs the delivery loop until interrupted (on the worker, as a cluster singleton). */
    readonly run: Effect.Effect<never>
  }
>()("@svc/server/WebhookDelivery") {
  static readonly layerNoDeps: Layer.Layer<WebhookDelivery, never, WebhookRepo | Encryption | Outbound | SvcConfig> =
    Layer.effect(
      WebhookDelivery,
      Effect.gen(function* () {
        const repo = yield* WebhookRepo
        const encryption = yield* Encryption
        const outbound = yield* Outbound
        const config = (yield* SvcConfig).webhooks
        const allowPrivateNetworks = (yield* SvcConfig).outbound.allowPrivateNetworks
        const nowDate = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

        const attempt = (delivery: DueDelivery) =>
          Effect.gen(function* () {
            const secret = yield* encryption.decrypt(
              secretContext({ id: delivery.webhookId, namespace: delivery.namespace }),
              delivery.secretEnc
            )
            if (typeof secret !== "string") return yield* Effect.die(new Error("a webhook secret is not a string"))
            const body = eventBody(delivery)
            const timestamp = Math.floor((yield* Clock.currentTimeMillis) / 1000)
            const url = new URL(delivery.url)
            const response = yield* outbound
              .send(
                {
                  method: "POST",
                  url,
                  headers: {
                    "content-type": "application/json",
                    "user-agent": "svc-webhooks",
                    "webhook-id": delivery.messageId,
                    "webhook-timestamp": String(timestamp),
                    "webhook-signature": signature(secret, delivery.messageId, timestamp, body)
                  },
                  body
                },
                {
                  policy: { allowedHosts: [url.host], allowPrivateNetworks },
                  timeouts: { connectMs: config.timeoutMs, firstByteMs: config.timeoutMs, totalMs: config.timeoutMs },
                  maxResponseBytes
                }
              )
              .pipe(Effect.result)
            return response
          })

        const outcomeOf = (delivery: DueDelivery, result: Effect.Success<ReturnType<typeof attempt>>, now: Date) => {
          if (result._tag === "Success" && result.success.status >= 200 && result.success.status < 300) {
            return { _tag: "Succeeded", statusCode: result.success.status } as const satisfies AttemptOutcome
          }
          const wait = config.retryScheduleMs[delivery.attempts]
          const retryAt = wait === undefined ? undefined : new Date(now.getTime() + wait)
          return result._tag === "Success"
            ? ({
                _tag: "Failed",
                statusCode: result.success.status,
                error: `HTTP ${result.success.status}`,
                retryAt
              } as const)
            : ({
                _tag: "Failed",
                statusCode: null,
                error: `${result.failure.reason}: ${result.failure.detail}`,
                retryAt
              } as const)
        }

        const deliverOne = (delivery: DueDelivery) =>
          Effect.gen(function* () {
            const result = yield* attempt(delivery).pipe(
              Effect.catchTag("DecryptionFailed", (error) => Effect.die(error))
            )
            const now = yield* nowDate
            const outcome = outcomeOf(delivery, result, now)
            yield* repo.recordAttempt(delivery.id, outcome, now)
            yield* Effect.logDebug("webhook attempt").pipe(
              Effect.annotateLogs({
                deliveryId: delivery.id,
                webhookId: delivery.webhookId,
                eventType: delivery.eventType,
                outcome: outcome._tag,
                statusCode: outcome.statusCode ?? "none"
              })
            )
          }).pipe(
            Effect.catchCause((cause) =>
              Effect.logWarning("webhook attempt failed; the lease expires and it runs again", cause)
            ),
            Effect.withSpan("WebhookDelivery.attempt", { attributes: { "svc.webhook.id": delivery.webhookId } })
          )

        const run = Effect.gen(function* () {
          const fibers = yield* FiberSet.make<void>()
          // An attempt that ends wakes the loop: its endpoint has room again.
          const wake = yield* Queue.sliding<void>(1)
          const inFlight = new Map<string, number>()
          let total = 0
          let lastPurge = 0
          let lastDisableCheck = 0
          const leaseMs = config.timeoutMs + 5_000
          const pass = Effect.gen(function* () {
            const now = yield* nowDate
            const fanned = yield* repo.fanOut(fanOutBatch, now, () => ({ id: makeId("whd"), messageId: makeId("msg") }))
            if (now.getTime() - lastDisableCheck >= Math.min(60_000, config.pollIntervalMs * 10)) {
              lastDisableCheck = now.getTime()
              // The namespace-level notice is written in the disabling transaction (docs/webhooks.md).
              const disabled = yield* repo.disableFailing(
                new Date(now.getTime() - config.disableAfterMs),
                now,
                (endpoint) => {
                  const notice = webhookDisabledNotice(endpoint)
                  return {
                    id: makeId("ntf"),
                    key: notice.key,
                    level: notice.level,
                    title: notice.title,
                    message: notice.message,
                    actionUrl: storedActionUrl(notice.action_url),
                    metadata: notice.metadata ?? {}
                  }
                }
              )
              for (const endpoint of disabled) {
                yield* Effect.logWarning("webhook endpoint disabled after failing for webhooks.disable_after").pipe(
                  Effect.annotateLogs({ webhookId: endpoint.id, namespace: endpoint.namespace })
                )
              }
            }
            if (now.getTime() - lastPurge > 60 * 60 * 1000) {
              lastPurge = now.getTime()
              yield* repo.purge(new Date(now.getTime() - config.logRetentionMs))
            }
            const room = maxInFlight - total
            if (room <= 0) return fanned
            // At most `concurrencyPerEndpoint` per endpoint: one slow receiver holds back only itself.
            const claimed = yield* repo.claimDue(
              now,
              new Date(now.getTime() + leaseMs),
              room,
              config.concurrencyPerEndpoint,
              Object.fromEntries(inFlight)
            )
            for (const delivery of claimed) {
              inFlight.set(delivery.webhookId, (inFlight.get(delivery.webhookId) ?? 0) + 1)
              total++
              yield* FiberSet.run(
                fibers,
                deliverOne(delivery).pipe(
                  Effect.ensuring(
                    Effect.sync(() => {
                      total--
                      const left = (inFlight.get(delivery.webhookId) ?? 1) - 1
                      if (left === 0) inFlight.delete(delivery.webhookId)
                      else inFlight.set(delivery.webhookId, left)
                      Queue.offerUnsafe(wake, undefined)
                    })
                  )
                )
              )
            }
            return fanned + claimed.length
          })
          return yield* Effect.forever(
            pass.pipe(
              Effect.catchCause((cause) =>
                Effect.as(Effect.logWarning("webhook delivery pass failed; retrying", cause), 0)
              ),
              Effect.flatMap((work) =>
                work > 0
                  ? Effect.yieldNow
                  : Effect.asVoid(Effect.timeoutOption(Queue.take(wake), config.pollIntervalMs))
              )
            )
          )
        }).pipe(Effect.scoped)

        return WebhookDelivery.of({ run })
      })
    )
}
