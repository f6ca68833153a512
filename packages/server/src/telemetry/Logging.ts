/**
 * Log records (spec 8.3 "Logs"): stderr as text or one JSON object per line (`log.format`), each
 * record emitted under a recording span stamped with `trace_id` and `span_id`; with
 * `signals.logs`, the same records also go to the OTLP collector (body: the message; attributes:
 * the error's type and message when the record carries one).
 */
import { Cause, Context, Logger, type LogLevel, Option } from "effect"
import { requestSpanOf } from "./InboundSpans.ts"
import { effectiveParent } from "./Tracing.ts"

/** The recording span of a log record's fiber, if any (transparent spans stand for their exported ancestor). */
export const recordingIds = (
  fiber: Logger.Options<unknown>["fiber"]
): { traceId: string; spanId: string } | undefined => {
  const current = effectiveParent(Option.fromUndefinedOr(fiber.cache.span))
  const span = current._tag === "Some" ? current.value : requestSpanOf(fiber)
  if (span === undefined || !span.sampled || span.traceId === "" || span.spanId === "") return undefined
  return { traceId: span.traceId, spanId: span.spanId }
}

/**
 * The services this process runs, comma-separated in the order given (`api`, `api,public`), for the
 * `service` field of JSON log records; `svc serve` provides it, other commands leave it unset.
 */
export const LogService = Context.Reference<string | undefined>("@svc/server/telemetry/LogService", {
  defaultValue: () => undefined
})

/** The stderr logger of `format`, stamping trace and span ids (and, as JSON, the process's services). */
export const stderrLogger = (format: "text" | "json"): Logger.Logger<unknown, void> => {
  if (format === "json") {
    return Logger.make((options) => {
      const structured = Logger.formatStructured.log(options) as Record<string, unknown>
      const service = options.fiber.getRef(LogService)
      if (service !== undefined) structured.service = service
      const ids = recordingIds(options.fiber)
      if (ids !== undefined) {
        structured.trace_id = ids.traceId
        structured.span_id = ids.spanId
      }
      console.error(JSON.stringify(structured))
    })
  }
  return Logger.make((options) => {
    const ids = recordingIds(options.fiber)
    if (ids === undefined) return Logger.defaultLogger.log(options)
    const message = Array.isArray(options.message) ? options.message : [options.message]
    return Logger.defaultLogger.log({
      ...options,
      message: [...message, `trace_id=${ids.traceId} span_id=${ids.spanId}`]
    })
  })
}

const severity: Record<LogLevel.LogLevel, number> = {
  All: 0,
  None: 0,
  Trace: 1,
  Debug: 5,
  Info: 9,
  Warn: 13,
  Error: 17,
  Fatal: 21
}

const text = (message: unknown): string => {
  const parts = Array.isArray(message) ? message : [message]
  return parts
    .map((p) => {
      if (typeof p === "string") return p
      try {
        return JSON.stringify(p)
      } catch {
        return String(p)
      }
    })
    .join(" ")
}

const origin = BigInt(1_000_000)

/** A logger pushing OTLP log records to `push`. */
export const otlpLogger = (push: (record: unknown) => void): Logger.Logger<unknown, void> =>
  Logger.make((options) => {
    const time = String(BigInt(options.date.getTime()) * origin)
    const attributes: Array<{ key: string; value: { stringValue: string } }> = []
    if (options.cause.reasons.length > 0) {
      const first = Cause.prettyErrors(options.cause)[0]
      if (first !== undefined) {
        attributes.push({ key: "exception.type", value: { stringValue: first.name } })
        attributes.push({ key: "exception.message", value: { stringValue: first.message } })
      }
    }
    const ids = recordingIds(options.fiber)
    push({
      timeUnixNano: time,
      observedTimeUnixNano: time,
      severityNumber: severity[options.logLevel],
      severityText: options.logLevel.toUpperCase(),
      body: { stringValue: text(options.message) },
      attributes,
      droppedAttributesCount: 0,
      ...(ids === undefined ? {} : { traceId: ids.traceId, spanId: ids.spanId, flags: 1 })
    })
  })
