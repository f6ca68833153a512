/**
 * Full request recording (spec 2.12, 6.1; `appMetrics.requestEvents.fullRequestRecording:
 * always`): the request and the response of one proxied exchange, redacted first (Redaction.ts),
 * then sealed with the namespace's data key (table `request_event_blobs`, column `request` or
 * `response`, row id the event id) and stored as two blobs under `request-events/<eventId>/`.
 * Recording never fails the exchange: a failure is logged without content and answered `false`.
 */
import { RecordedBody, RecordedRequest, RecordedResponse, Recording } from "@svc/domain/Recording"
import { Cause, Clock, Context, Effect, Layer, Option, Schema } from "effect"
import type { SvcConfig } from "../config/SvcConfig.ts"
import type { InjectionPlaces } from "../outbound/CredentialInjection.ts"
import { type DecryptionFailed, Encryption } from "../crypto/Encryption.ts"
import { BlobStorage, BlobStorageError, isValidKey } from "./BlobStorage.ts"
import type { CapturedBody } from "./BodyCapture.ts"
import { makeRedactor, type RecordedHeaders } from "./Redaction.ts"

export type { RecordedHeaders }

/** Bytes kept of each body unless the layer is given another cap: 1 MiB. */
export const defaultRecordingCap = 1024 * 1024

/** The encryption table of recordings (bound into each blob's authenticated data). */
export const recordingTable = "request_event_blobs"

/** One proxied exchange to record. */
export interface RecordingInput {
  readonly eventId: string
  readonly namespace: string
  /** The places the auth method set credentials: `redactionTargets(definition.auth)`. */
  readonly redact: InjectionPlaces
  /** Secret values (the injected credential and what it derives from): any occurrence is replaced. */
  readonly secrets?: ReadonlyArray<string> | undefined
  readonly request: {
    readonly method: string
    readonly url: string
    readonly headers: RecordedHeaders
    readonly body: CapturedBody
  }
  readonly response?:
    | { readonly status: number; readonly headers: RecordedHeaders; readonly body: CapturedBody }
    | undefined
  /** Why no response was recorded (upstream unreachable, timeout, …), when `response` is absent. */
  readonly error?: string | undefined
}

export { RecordedBody, Recording }

const RequestDocument = Schema.Struct({
  v: Schema.Literal(1),
  eventId: Schema.String,
  recordedAt: Schema.String,
  request: RecordedRequest
})

const ResponseDocument = Schema.Struct({
  v: Schema.Literal(1),
  response: Schema.optionalKey(RecordedResponse),
  error: Schema.optionalKey(Schema.String)
})

/** The blob keys of one event's recording. */
export const recordingKeys = (eventId: string) => ({
  request: `request-events/${eventId}/request`,
  response: `request-events/${eventId}/response`
})

/** The bytes of a recorded body; undefined when it was skipped. */
export const recordedBytes = (body: RecordedBody): Uint8Array | undefined =>
  "base64" in body ? new Uint8Array(Buffer.from(body.base64, "base64")) : undefined

/** Records and reads full request recordings. */
export class Recordings extends Context.Service<
  Recordings,
  {
    /** Bytes kept of each body; captures should use it (`new BodyCapture(capBytes)`). */
    readonly capBytes: number
    /** Redacts, encrypts and stores; true when both blobs were stored. Never fails. */
    record(input: RecordingInput): Effect.Effect<boolean>
    /** The recording of an event, decrypted; none when there is none. The namespace must be the event's. */
    read(
      eventId: string,
      namespace: string
    ): Effect.Effect<Option.Option<Recording>, BlobStorageError | DecryptionFailed>
    /** Deletes an event's recording (retention); absent blobs are fine. */
    remove(eventId: string): Effect.Effect<void, BlobStorageError>
  }
>()("@svc/server/Recordings") {
  /** Over the provided BlobStorage and Encryption; `maxBodyBytes` defaults to {@link defaultRecordingCap}. */
  static readonly layerNoDeps = (options?: {
    readonly maxBodyBytes?: number | undefined
  }): Layer.Layer<Recordings, never, BlobStorage | Encryption> =>
    Layer.effect(Recordings, make(options?.maxBodyBytes ?? defaultRecordingCap))

  /** Over the configured blob storage (`appMetrics.blobStorage`). */
  static readonly layer = (options?: {
    readonly maxBodyBytes?: number | undefined
  }): Layer.Layer<Recordings, never, Encryption | SvcConfig> =>
    Recordings.layerNoDeps(options).pipe(Layer.provide(BlobStorage.layerFromConfig))
}

/** An event id the key scheme and the cipher context accept: one key segment. */
const validEventId = (eventId: string): boolean => !eventId.includes("/") && isValidKey(eventId)

const utf8 = new TextEncoder()
const fromUtf8 = new TextDecoder("utf-8", { fatal: true })

/** Why a recording failed, for the log: our own error texts only, never content. */
const failureReason = (cause: Cause.Cause<unknown>): string => {
  for (const reason of cause.reasons) {
    if (reason._tag === "Fail") {
      return reason.error instanceof BlobStorageError ? reason.error.message : "failed"
    }
    if (reason._tag === "Die") {
      return `defect (${reason.defect instanceof Error ? reason.defect.name : typeof reason.defect})`
    }
  }
  return "unknown"
}

const make = Effect.fnUntraced(function* (capBytes: number) {
  if (!Number.isSafeInteger(capBytes) || capBytes < 0) {
    return yield* Effect.die(new RangeError(`recording cap must be a non-negative integer, got ${capBytes}`))
  }
  const storage = yield* BlobStorage
  const encryption = yield* Encryption
  const context = (column: "request" | "response", eventId: string, namespace: string) => ({
    table: recordingTable,
    column,
    rowId: eventId,
    namespace
  })

  const write = Effect.fnUntraced(function* (input: RecordingInput) {
    const keys = recordingKeys(input.eventId)
    const redactor = makeRedactor(input.redact, input.secrets ?? [])
    const body = (captured: CapturedBody): RecordedBody => {
      if ("skipped" in captured) return { skipped: captured.skipped }
      const cut = captured.truncated || captured.bytes.byteLength > capBytes
      const kept = captured.bytes.byteLength > capBytes ? captured.bytes.subarray(0, capBytes) : captured.bytes
      const redacted = redactor.body(kept, cut)
      return {
        base64: Buffer.from(redacted.buffer, redacted.byteOffset, redacted.byteLength).toString("base64"),
        totalBytes: Math.max(captured.totalBytes, captured.bytes.byteLength),
        truncated: cut
      }
    }
    const recordedAt = new Date(yield* Clock.currentTimeMillis).toISOString()
    const request: typeof RequestDocument.Type = {
      v: 1,
      eventId: input.eventId,
      recordedAt,
      request: {
        method: input.request.method,
        url: redactor.url(input.request.url),
        headers: redactor.headers(input.request.headers),
        body: body(input.request.body)
      }
    }
    const response: typeof ResponseDocument.Type | undefined =
      input.response !== undefined
        ? {
            v: 1,
            response: {
              status: input.response.status,
              headers: redactor.headers(input.response.headers),
              body: body(input.response.body)
            }
          }
        : input.error !== undefined
          ? { v: 1, error: input.error }
          : undefined
    const sealedRequest = yield* encryption.encrypt(context("request", input.eventId, input.namespace), request)
    const sealedResponse =
      response === undefined
        ? undefined
        : yield* encryption.encrypt(context("response", input.eventId, input.namespace), response)
    if (sealedResponse !== undefined) {
      yield* storage.put(keys.response, utf8.encode(sealedResponse))
    }
    // The request blob last: `read` finds a recording only once it is whole.
    yield* storage
      .put(keys.request, utf8.encode(sealedRequest))
      .pipe(Effect.tapError(() => Effect.ignore(storage.remove(keys.response))))
    return true
  })

  const record = (input: RecordingInput): Effect.Effect<boolean> => {
    // Event ids are ours (`req_…`); anything else could escape the key scheme or the cipher context.
    if (!validEventId(input.eventId)) {
      return Effect.as(
        Effect.logWarning("request recording not stored").pipe(Effect.annotateLogs({ reason: "invalid event id" })),
        false
      )
    }
    return write(input).pipe(
      Effect.catchCause((cause) =>
        Cause.hasInterruptsOnly(cause)
          ? Effect.interrupt
          : Effect.as(
              Effect.logWarning("request recording not stored").pipe(
                Effect.annotateLogs({ eventId: input.eventId, reason: failureReason(cause) })
              ),
              false
            )
      ),
      Effect.withSpan("Recordings.record", { attributes: { "svc.request_event.id": input.eventId } })
    )
  }

  const open = (column: "request" | "response", eventId: string, namespace: string, bytes: Uint8Array) =>
    Effect.flatMap(
      Effect.orDie(Effect.try({ try: () => fromUtf8.decode(bytes), catch: () => new Error("blob is not UTF-8") })),
      (text) => encryption.decrypt(context(column, eventId, namespace), text)
    )
  // A sealed document that does not decode is a defect of our own data.
  const decodeRequest = (value: unknown) => Effect.orDie(Schema.decodeUnknownEffect(RequestDocument)(value))
  const decodeResponse = (value: unknown) => Effect.orDie(Schema.decodeUnknownEffect(ResponseDocument)(value))

  const read = Effect.fn("Recordings.read")(function* (eventId: string, namespace: string) {
    if (!validEventId(eventId)) return Option.none<Recording>()
    const keys = recordingKeys(eventId)
    const sealedRequest = yield* storage.get(keys.request)
    if (Option.isNone(sealedRequest)) return Option.none<Recording>()
    const request = yield* Effect.flatMap(open("request", eventId, namespace, sealedRequest.value), decodeRequest)
    const sealedResponse = yield* storage.get(keys.response)
    const response = Option.isNone(sealedResponse)
      ? undefined
      : yield* Effect.flatMap(open("response", eventId, namespace, sealedResponse.value), decodeResponse)
    const recording: Recording = {
      eventId,
      namespace,
      recordedAt: request.recordedAt,
      request: request.request,
      ...(response?.response !== undefined ? { response: response.response } : {}),
      ...(response?.error !== undefined ? { error: response.error } : {})
    }
    return Option.some(recording)
  })

  const remove = Effect.fn("Recordings.remove")(function* (eventId: string) {
    if (!validEventId(eventId)) return
    const keys = recordingKeys(eventId)
    yield* storage.remove(keys.request)
    yield* storage.remove(keys.response)
  })

  return Recordings.of({ capBytes, record, read, remove })
})
