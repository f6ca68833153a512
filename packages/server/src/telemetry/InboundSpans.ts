/**
 * The server span of each inbound request, by its Node request, and the lookup of "the request
 * this fiber serves": handlers of effect's HttpApi run with the context their layer was built
 * with, so the span in a handler's context may not be its request's; the request itself is.
 */
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Context, type Fiber, type Tracer } from "effect"
import { HttpServerRequest } from "effect/http"
import type { IncomingMessage } from "node:http"

/** What is tracked of one inbound request. */
export interface InboundRecord {
  readonly span: Tracer.Span | undefined
  actorId: string | undefined
}

/** Where a request's record is kept: a property of the request itself (no WeakMap entry per request). */
const recordKey = Symbol("svc.inboundRecord")

type Holder = { [recordKey]?: InboundRecord }

/** The record of each tracked inbound request. */
export const records = {
  get: (request: IncomingMessage): InboundRecord | undefined => (request as Holder)[recordKey],
  set: (request: IncomingMessage, record: InboundRecord): void => {
    ;(request as Holder)[recordKey] = record
  }
}

/** The span of `request` if some service of this process traced it. */
export const inboundSpanOf = (request: IncomingMessage): Tracer.Span | undefined => records.get(request)?.span

/** The server span of the request `fiber` serves, if any. */
export const requestSpanOf = (fiber: Fiber.Fiber<unknown, unknown> | undefined): Tracer.Span | undefined => {
  if (fiber === undefined) return undefined
  const request = Context.getOrUndefined(fiber.context, HttpServerRequest.HttpServerRequest)
  if (request === undefined) return undefined
  return inboundSpanOf(NodeHttpServerRequest.toIncomingMessage(request) as IncomingMessage)
}

/** A span that can carry an exception event (`Tracing.ExportedSpan`). */
interface ExceptionHolder {
  exception: { readonly type: string; readonly message: string } | undefined
}

/**
 * A failure that escaped the handler of the request `fiber` serves (a "panic", answered 500):
 * recorded as the `exception` event of its server span (type and message, no stack).
 */
export const recordRequestException = (
  fiber: Fiber.Fiber<unknown, unknown> | undefined,
  cause: Cause.Cause<unknown>
): void => {
  const span = requestSpanOf(fiber)
  if (span === undefined || !span.sampled || span.status._tag === "Ended" || !("exception" in span)) return
  const first = Cause.prettyErrors(cause)[0]
  if (first !== undefined)
    span.exception = { type: first.name, message: first.message } satisfies ExceptionHolder["exception"]
}
