/**
 * What a proxied request leaves behind (spec 2.12, 6.1; ARCHITECTURE "request path" step 7):
 * one request event with the frozen label snapshot and who answered (the upstream, or svc itself
 * with the rate-limit fields), and with full recording `always` the redacted, encrypted request
 * and response. Both are written after the caller has its answer, off the request's fiber;
 * neither can fail the request.
 */
import type { StoredCredentials } from "@svc/domain/ConnectorAuth"
import { makeId } from "@svc/domain/Ids"
import {
  eventHost,
  eventPath,
  noRateLimit,
  type RequestEvent,
  type RequestEventRateLimit,
  type SvcResponseSource
} from "@svc/domain/RequestEvent"
import { Context, Duration, Effect, Fiber, Layer, Option } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { type CapturedBody, captureSkipped, SkipReason } from "../events/BodyCapture.ts"
import { RequestEventSink } from "../events/RequestEventBuffer.ts"
import { type RecordedHeaders, Recordings } from "../events/Recordings.ts"
import type { ProxyTarget } from "./ProxyTargets.ts"

/** The request side of one proxied exchange, fixed when it starts. */
export interface ExchangeStart {
  readonly id: string
  readonly startedAt: number
  readonly target: ProxyTarget
  readonly actorId: string
  readonly method: string
  readonly url: URL
  readonly labels: Readonly<Record<string, string>>
}

/** What was seen of both legs, kept only when recording (the request as the caller sent it). */
export interface ExchangeRecording {
  readonly requestHeaders: RecordedHeaders
  readonly requestBody: CapturedBody
  readonly responseHeaders?: RecordedHeaders | undefined
  readonly responseBody?: CapturedBody | undefined
  readonly error?: string | undefined
}

/**
 * How the exchange ended (spec 2.12 `response_source`): the request went upstream (an answer, or
 * none when the upstream was unreachable or timed out), or svc answered it itself without calling
 * the upstream (a rate-limit rule or the reactive limiter).
 */
export type ExchangeEnd =
  | {
      readonly source: "upstream"
      /** The upstream status; undefined when no answer arrived. */
      readonly status: number | undefined
      readonly durationMs: number
      /** The rules that matched without rejecting (spec 2.12); undefined when none did. */
      readonly rateLimit: RequestEventRateLimit | undefined
      readonly recording?: ExchangeRecording | undefined
    }
  | {
      readonly source: SvcResponseSource
      /** The status of svc's own answer. */
      readonly status: number
      readonly durationMs: number
      /** The rule that answered and every rule that matched (spec 2.12); undefined for none. */
      readonly rateLimit: RequestEventRateLimit | undefined
      readonly recording?: ExchangeRecording | undefined
    }

/** The secret values of stored credentials: recordings replace any occurrence (defence in depth). */
export const credentialSecrets = (credentials: StoredCredentials | undefined): ReadonlyArray<string> => {
  if (credentials === undefined) return []
  switch (credentials.kind) {
    case "api_key":
      return [credentials.api_key]
    case "basic":
      return [credentials.password, Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64")]
    case "oauth2_client_credentials":
      return [
        credentials.token.access_token,
        ...(credentials.client_secret === undefined ? [] : [credentials.client_secret])
      ]
    case "oauth2_authorization_code":
      return [
        credentials.token.access_token,
        ...(credentials.token.refresh_token === undefined ? [] : [credentials.token.refresh_token])
      ]
  }
}

export class ProxyEvents extends Context.Service<
  ProxyEvents,
  {
    /** True when full recording is `always` (capture the bodies). */
    readonly recording: boolean
    /** The per-body recording cap in bytes. */
    readonly recordingCap: number
    /** Opens an exchange: its event id and start time. */
    readonly start: (fields: Omit<ExchangeStart, "id" | "startedAt">) => ExchangeStart
    /** Records the event (and the recording) without blocking the caller. */
    readonly finish: (start: ExchangeStart, end: ExchangeEnd) => void
  }
>()("@svc/server/ProxyEvents") {
  static readonly layerNoDeps = (options?: { readonly recordingCap?: number }) =>
    Layer.effect(
      ProxyEvents,
      Effect.gen(function* () {
        const config = yield* SvcConfig
        const sink = yield* RequestEventSink
        const recordings = yield* Effect.serviceOption(Recordings)
        const recording = config.appMetrics.fullRequestRecording === "always" && Option.isSome(recordings)
        const recordingCap =
          options?.recordingCap ?? (Option.isSome(recordings) ? recordings.value.capBytes : 1024 * 1024)
        const context = yield* Effect.context<never>()
        // Recordings still being written at shutdown are waited for (bounded) before the sink
        // closes, so their events are not lost.
        const writing = new Set<Fiber.Fiber<unknown, unknown>>()
        yield* Effect.addFinalizer(() =>
          Fiber.awaitAll([...writing]).pipe(Effect.timeoutOption(Duration.seconds(30)), Effect.asVoid)
        )

        const event = (start: ExchangeStart, end: ExchangeEnd, recorded: boolean): RequestEvent => {
          const { row } = start.target
          const rateLimit = end.rateLimit ?? noRateLimit
          return {
            id: start.id,
            timestamp: new Date(start.startedAt).toISOString(),
            namespace: row.namespace,
            type: "proxy",
            method: start.method,
            host: eventHost(start.url),
            path: eventPath(start.url),
            response_status_code: end.status ?? null,
            response_source: end.source,
            connector_id: row.connectorId,
            connector_version: row.connectorVersion,
            connection_id: row.id,
            actor_id: start.actorId,
            duration_ms: end.durationMs,
            labels: start.labels,
            rate_limit_id: rateLimit.rate_limit_id,
            rate_limit_mode: rateLimit.rate_limit_mode,
            rate_limit_bucket: rateLimit.rate_limit_bucket,
            rate_limit_matched: rateLimit.rate_limit_matched,
            full_request_recorded: recorded
          }
        }

        const finish = (start: ExchangeStart, end: ExchangeEnd) => {
          if (!recording || end.recording === undefined || Option.isNone(recordings)) {
            sink.record(event(start, end, false))
            return
          }
          const seen = end.recording
          const write = recordings.value.record({
            eventId: start.id,
            namespace: start.target.row.namespace,
            redact: start.target.redact,
            secrets: credentialSecrets(start.target.credentials),
            request: {
              method: start.method,
              url: start.url.href,
              headers: seen.requestHeaders,
              body: seen.requestBody
            },
            response:
              seen.responseHeaders === undefined || end.status === undefined
                ? undefined
                : {
                    status: end.status,
                    headers: seen.responseHeaders,
                    body: seen.responseBody ?? captureSkipped(SkipReason.notRead)
                  },
            error: seen.error
          })
          const fiber = Effect.runForkWith(context)(
            write.pipe(
              Effect.catchCause(() => Effect.succeed(false)),
              Effect.tap((recorded) => Effect.sync(() => sink.record(event(start, end, recorded))))
            )
          )
          writing.add(fiber)
          fiber.addObserver(() => writing.delete(fiber))
        }

        return ProxyEvents.of({
          recording,
          recordingCap,
          start: (fields) => ({ ...fields, id: makeId("req"), startedAt: Date.now() }),
          finish
        })
      })
    )
}
