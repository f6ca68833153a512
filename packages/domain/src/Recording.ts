/**
 * Full request recordings (spec 2.12, 6.1): the redacted request and response of one request
 * event, stored encrypted when `appMetrics.requestEvents.fullRequestRecording` is `always`, and
 * read back at `GET /api/v1/metrics/request-events/{id}/recording`.
 */
import { Schema } from "effect"

const Headers = Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Array(Schema.String)]))

/**
 * A body as recorded: its first bytes in base64 with the capture metadata (`truncated` when the
 * body was longer than the recording cap), or why it was skipped.
 */
export const RecordedBody = Schema.Union([
  Schema.Struct({ base64: Schema.String, totalBytes: Schema.Number, truncated: Schema.Boolean }),
  Schema.Struct({ skipped: Schema.String })
]).annotate({ identifier: "RecordedBody" })
export type RecordedBody = typeof RecordedBody.Type

/** The request as the caller sent it (before credentials were injected), redacted. */
export const RecordedRequest = Schema.Struct({
  method: Schema.String,
  url: Schema.String,
  headers: Headers,
  body: RecordedBody
}).annotate({ identifier: "RecordedRequest" })

/** The answer as it came back, redacted. */
export const RecordedResponse = Schema.Struct({ status: Schema.Number, headers: Headers, body: RecordedBody }).annotate(
  { identifier: "RecordedResponse" }
)

/** A stored recording, redacted, decrypted. */
export const Recording = Schema.Struct({
  eventId: Schema.String,
  namespace: Schema.String,
  /** ISO 8601 time the recording was written. */
  recordedAt: Schema.String,
  request: RecordedRequest,
  response: Schema.optionalKey(RecordedResponse),
  /** Why no response was recorded (upstream unreachable, timeout, …), when `response` is absent. */
  error: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "Recording" })
export type Recording = typeof Recording.Type
