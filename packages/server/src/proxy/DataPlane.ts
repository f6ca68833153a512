/**
 * The proxy data plane (spec 4.2, 2.5, 2.12; ARCHITECTURE "request path"): `_proxy` (an
 * envelope in, an envelope out) and `_proxy_raw` (both bodies stream). Each request resolves its
 * connection from the in-process cache, freezes its label snapshot, waits for a slot under the
 * connection's concurrency cap, injects credentials last and leaves through `Outbound` (host
 * allow-list, connect-time address checks, no redirects followed). The event is written after the
 * answer, off the request's fiber.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import { pipeline } from "node:stream/promises"
import { Transform } from "node:stream"
import { BadRequest, ServiceUnavailable } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import {
  labelHeader,
  labelSnapshot,
  parseLabelHeaders,
  type ProxyRequest,
  type ProxyResponse,
  upstreamUrlHeader
} from "@svc/domain/Proxy"
import { Context, Effect, Layer } from "effect"
import { BodyCapture, captureBuffered } from "../events/BodyCapture.ts"
import type { RecordedHeaders } from "../events/Recordings.ts"
import { ConnectionGate, type Release } from "./ConnectionGate.ts"
import { CredentialInjectionError, injectCredentials } from "../outbound/CredentialInjection.ts"
import { Outbound } from "../outbound/Outbound.ts"
import { logSafeTarget, OutboundError, outboundHttpError } from "../outbound/OutboundError.ts"
import { type ExchangeStart, ProxyEvents } from "./ProxyEvents.ts"
import { ProxyTargets, type ProxyTarget, type TargetError } from "./ProxyTargets.ts"
import { responseEnvelope } from "./ResponseEnvelope.ts"

/** Errors a proxied request answers with before any upstream byte reached the caller. */
export type ProxyError = TargetError | BadRequest | ServiceUnavailable | ReturnType<typeof outboundHttpError>

/** Outbound failures of requests the guard refused: they never left, so they leave no event. */
const refusedBeforeLeaving: ReadonlySet<string> = new Set([
  "host_not_allowed",
  "address_not_allowed",
  "invalid_request"
])

/** Largest upstream response `_proxy` buffers into its envelope. */
export const maxEnvelopeResponseBytes = 10 * 1024 * 1024

/** Headers of the caller's leg to svc that never describe the upstream request. */
const callerOnly: ReadonlySet<string> = new Set(["host", "content-length", "authorization"])

/**
 * The caller's headers as they may travel upstream, lower-cased, before credential injection
 * (what a recording shows): without svc's own `X-Svc-*` controls; `Cookie` only when the caller
 * addressed it to the upstream (the `_proxy` envelope), never a raw request's own cookies.
 */
const forwardable = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>,
  keepCookie: boolean
): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase()
    if (value === undefined || callerOnly.has(lower) || lower.startsWith("x-svc-")) continue
    if (lower === "cookie" && !keepCookie) continue
    out[lower] = typeof value === "string" ? value : value.join(", ")
  }
  return out
}

const badRequest = (error: string, code: string, field?: string, message?: string) =>
  new BadRequest({
    error,
    code,
    ...(field === undefined ? {} : { details: [{ field, message: message ?? error }] })
  })

const parseUrl = (text: string | undefined, field: string): URL | BadRequest => {
  if (text === undefined || text === "") return badRequest(`${field} is required`, "invalid_request", field)
  try {
    const url = new URL(text)
    if (url.protocol === "http:" || url.protocol === "https:") return url
  } catch {}
  return badRequest(`${field} must be an absolute http or https URL`, "invalid_request", field)
}

const headerValues = (value: string | Array<string> | undefined): ReadonlyArray<string> =>
  value === undefined ? [] : Array.isArray(value) ? value : [value]

export class DataPlane extends Context.Service<
  DataPlane,
  {
    /** `POST /api/v1/connections/{id}/_proxy`. */
    readonly proxy: (
      actor: AuthenticatedActor,
      id: string,
      request: ProxyRequest
    ) => Effect.Effect<ProxyResponse, ProxyError>
    /**
     * `/api/v1/connections/{id}/_proxy_raw`: answers the caller on `response` directly, streaming;
     * fails only before the upstream answer's head was written.
     */
    readonly proxyRaw: (
      actor: AuthenticatedActor,
      id: string,
      request: IncomingMessage,
      response: ServerResponse
    ) => Effect.Effect<void, ProxyError>
  }
>()("@svc/server/DataPlane") {
  static readonly layer: Layer.Layer<DataPlane, never, ProxyTargets | Outbound | ProxyEvents> = Layer.effect(
    DataPlane,
    Effect.gen(function* () {
      const targets = yield* ProxyTargets
      const outbound = yield* Outbound
      const events = yield* ProxyEvents
      const gate = new ConnectionGate()

      /** A slot under the connection's cap, waiting at most the connect timeout. */
      const admit = (target: ProxyTarget): Effect.Effect<Release, ServiceUnavailable> => {
        const entered = gate.enter(
          target.row.id,
          target.definition.proxy.max_concurrent_requests,
          target.send.timeouts.connectMs
        )
        if (typeof entered === "function") return Effect.succeed(entered)
        const refused = () =>
          new ServiceUnavailable({
            error: `connection ${target.row.id} has ${target.definition.proxy.max_concurrent_requests} requests in flight; retry later`,
            code: "connection_concurrency_exceeded"
          })
        return Effect.callback<Release, ServiceUnavailable>((resume) => {
          let abandoned = false
          void entered.then((release) => {
            // A caller that went away while queued hands its slot straight back.
            if (abandoned) release?.()
            else resume(release === undefined ? Effect.fail(refused()) : Effect.succeed(release))
          })
          return Effect.sync(() => {
            abandoned = true
          })
        })
      }

      const refreshable = (target: ProxyTarget) =>
        target.credentials?.kind === "oauth2_authorization_code" ||
        target.credentials?.kind === "oauth2_client_credentials"

      const inject = (target: ProxyTarget, url: URL, headers: Record<string, string>) =>
        Effect.try({
          try: () => injectCredentials(target.definition.auth, target.credentials, { url, headers }),
          catch: (error) =>
            error instanceof CredentialInjectionError
              ? new ServiceUnavailable({
                  error: `connection credentials are not usable: ${error.message}`,
                  code: "credentials_unusable"
                })
              : new ServiceUnavailable({ error: "connection credentials are not usable", code: "credentials_unusable" })
        })

      const proxy = Effect.fn("DataPlane.proxy")(function* (actor: AuthenticatedActor, id: string, body: ProxyRequest) {
        const first = yield* targets.get(actor, id)
        if (body.bodyJson !== undefined && body.bodyRaw !== undefined) {
          return yield* badRequest("bodyJson and bodyRaw exclude each other", "invalid_request", "body.bodyRaw")
        }
        const url = new URL(body.url)
        const headers = forwardable(body.headers ?? {}, true)
        let payload: Uint8Array | undefined
        if (body.bodyJson !== undefined) {
          payload = Buffer.from(JSON.stringify(body.bodyJson))
          headers["content-type"] ??= "application/json"
        } else if (body.bodyRaw !== undefined) {
          payload = Buffer.from(body.bodyRaw, "base64")
        }
        const labels = labelSnapshot(first.row.labels, actor, body.labels)

        /** One exchange with the upstream, recorded as one request event. */
        const exchange = (target: ProxyTarget) =>
          Effect.gen(function* () {
            const start = events.start({ target, actorId: actor.id, method: body.method, url, labels })
            const release = yield* admit(target)
            const injected = yield* inject(target, url, headers).pipe(Effect.tapError(() => Effect.sync(release)))
            const answer = yield* outbound
              .send(
                {
                  method: body.method,
                  url: injected.url,
                  headers: injected.headers,
                  ...(payload ? { body: payload } : {})
                },
                { ...target.send, maxResponseBytes: maxEnvelopeResponseBytes }
              )
              .pipe(Effect.result, Effect.ensuring(Effect.sync(release)))
            const durationMs = Date.now() - start.startedAt
            const recording = events.recording
              ? {
                  requestHeaders: headers,
                  requestBody: captureBuffered(payload ?? new Uint8Array(0), events.recordingCap),
                  ...(answer._tag === "Success"
                    ? {
                        responseHeaders: answer.success.headers as RecordedHeaders,
                        responseBody: captureBuffered(answer.success.body, events.recordingCap)
                      }
                    : { error: answer.failure.message })
                }
              : undefined
            if (answer._tag === "Failure") {
              // A request the guard refused never left: it is the caller's error, not an exchange.
              if (!refusedBeforeLeaving.has(answer.failure.reason)) {
                events.finish(start, { status: undefined, durationMs, ...(recording ? { recording } : {}) })
              }
              return yield* outboundHttpError(answer.failure)
            }
            events.finish(start, { status: answer.success.status, durationMs, ...(recording ? { recording } : {}) })
            return answer.success
          })

        const answer = yield* exchange(first)
        if (answer.status !== 401 || !refreshable(first)) return responseEnvelope(answer)
        // An OAuth2 token the upstream refused: one refresh (single flight) and one retry.
        const renewed = yield* targets.afterUnauthorized(first)
        if (renewed === undefined) return responseEnvelope(answer)
        return responseEnvelope(yield* exchange(renewed))
      })

      const rawExchange = (
        actor: AuthenticatedActor,
        target: ProxyTarget,
        request: IncomingMessage,
        response: ServerResponse,
        retried: boolean
      ): Effect.Effect<void, ProxyError> =>
        Effect.gen(function* () {
          const url = parseUrl(headerValues(request.headers[upstreamUrlHeader])[0], `header.${upstreamUrlHeader}`)
          if (url instanceof BadRequest) return yield* url
          const labels = parseLabelHeaders(headerValues(request.headers[labelHeader]))
          if ("problems" in labels) {
            const first = labels.problems[0]
            return yield* badRequest("a request label is not valid", "invalid_label", first?.field, first?.message)
          }
          const override = headerValues(request.headers["x-svc-upstream-method"])[0]
          const method = (override ?? request.method ?? "GET").toUpperCase()
          const headers = forwardable(request.headers, false)
          const declared = request.headers["content-length"]
          const contentLength = declared === undefined ? undefined : Number(declared)
          const hasBody =
            (contentLength !== undefined && contentLength > 0) || request.headers["transfer-encoding"] !== undefined
          const start: ExchangeStart = events.start({
            target,
            actorId: actor.id,
            method,
            url,
            labels: labelSnapshot(target.row.labels, actor, labels.labels)
          })
          const requestCapture = events.recording ? new BodyCapture(events.recordingCap) : undefined
          const responseCapture = events.recording ? new BodyCapture(events.recordingCap) : undefined
          const upload =
            hasBody && requestCapture !== undefined
              ? request.pipe(
                  new Transform({
                    transform(chunk: Buffer, _encoding, callback) {
                      requestCapture.push(chunk)
                      callback(null, chunk)
                    }
                  })
                )
              : request
          const release = yield* admit(target)
          const injected = yield* inject(target, url, headers).pipe(Effect.tapError(() => Effect.sync(release)))
          const answer = yield* outbound
            .stream(
              {
                method,
                url: injected.url,
                headers: injected.headers,
                ...(hasBody ? { body: upload } : {}),
                ...(contentLength !== undefined && Number.isSafeInteger(contentLength) && hasBody
                  ? { contentLength }
                  : {})
              },
              target.send,
              responseCapture === undefined ? undefined : (chunk) => responseCapture.push(chunk)
            )
            .pipe(
              Effect.result,
              Effect.onInterrupt(() => Effect.sync(release))
            )
          const record = (status: number | undefined, responseHeaders?: RecordedHeaders, error?: string) =>
            events.finish(start, {
              status,
              durationMs: Date.now() - start.startedAt,
              ...(requestCapture === undefined
                ? {}
                : {
                    recording: {
                      requestHeaders: headers,
                      requestBody: requestCapture.result(),
                      responseHeaders,
                      responseBody: responseCapture?.result(),
                      error
                    }
                  })
            })
          if (answer._tag === "Failure") {
            release()
            if (!refusedBeforeLeaving.has(answer.failure.reason)) {
              record(undefined, undefined, answer.failure.message)
            }
            return yield* outboundHttpError(answer.failure)
          }
          const upstream = answer.success
          if (upstream.status === 401 && !hasBody && !retried && refreshable(target)) {
            // An OAuth2 token the upstream refused, on a request without a body (nothing to
            // replay): drop this answer, refresh once (single flight) and retry once.
            const renewed = yield* targets.afterUnauthorized(target)
            if (renewed !== undefined) {
              upstream.body.destroy()
              release()
              record(upstream.status, upstream.headers as RecordedHeaders)
              return yield* rawExchange(actor, renewed, request, response, true)
            }
          }
          void upstream.done.then((outcome) => {
            release()
            record(upstream.status, upstream.headers as RecordedHeaders, outcome.error)
          })
          try {
            response.writeHead(upstream.status, upstream.headers as Record<string, string | Array<string>>)
            response.flushHeaders()
          } catch {
            upstream.body.destroy()
            return yield* outboundHttpError(
              new OutboundError({
                reason: "protocol_error",
                target: logSafeTarget(url),
                detail: "the upstream answered headers that cannot be relayed"
              })
            )
          }
          yield* Effect.promise(() =>
            pipeline(upstream.body, response).catch(() => {
              // The caller went away or the upstream broke mid-body: the socket is closed, the
              // event records what happened.
              if (!response.destroyed) response.destroy()
            })
          )
        })

      const proxyRaw = Effect.fn("DataPlane.proxyRaw")(function* (
        actor: AuthenticatedActor,
        id: string,
        request: IncomingMessage,
        response: ServerResponse
      ) {
        const target = yield* targets.get(actor, id)
        return yield* rawExchange(actor, target, request, response, false)
      })

      return DataPlane.of({ proxy, proxyRaw })
    })
  )
}
