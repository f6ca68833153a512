/**
 * The outermost handler of every service: whatever escapes a route becomes the standard error
 * body of API-CONVENTIONS (never an empty body, never a stack trace or cause).
 */
import { type Cause, Effect, type Layer } from "effect"
import { HttpRouter, HttpServerError, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiError } from "effect/http-api"
import type { unhandled } from "effect/Types"
import { type ErrorDetail, errorBody, internalErrorBody, issueDetails } from "@svc/domain/Errors"
import { recordRequestException } from "../telemetry/InboundSpans.ts"

/** A standard error response. */
export const errorResponse = (status: number, error: string, code: string, details?: ReadonlyArray<ErrorDetail>) =>
  HttpServerResponse.jsonUnsafe(errorBody(details === undefined ? { error, code } : { error, code, details }), {
    status
  })

const schemaRoot = { Params: "path", Query: "query", Headers: "headers", Payload: "body" } as const

const internalError = errorResponse(500, internalErrorBody.error, internalErrorBody.code)

/** What to answer for a path no route matches: 401 under `/api/` without valid credentials, else 404. */
export type NotFoundPolicy = (
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<HttpServerResponse.HttpServerResponse>

export const defaultNotFound: NotFoundPolicy = () => Effect.succeed(errorResponse(404, "not found", "not_found"))

const fromCause = (
  cause: Cause.Cause<unknown>,
  notFound: NotFoundPolicy
): Effect.Effect<HttpServerResponse.HttpServerResponse, unhandled> => {
  for (const reason of cause.reasons) {
    const serverError =
      reason._tag === "Fail" && HttpServerError.isHttpServerError(reason.error)
        ? reason.error
        : reason._tag === "Die" && HttpServerError.isHttpServerError(reason.defect)
          ? reason.defect
          : undefined
    if (serverError !== undefined) {
      const inner = serverError.reason
      switch (inner._tag) {
        case "RouteNotFound":
          return notFound(inner.request)
        case "RequestParseError":
          return Effect.succeed(
            inner.reason === "BodyTooLarge"
              ? errorResponse(413, "request body too large", "payload_too_large")
              : errorResponse(400, "the request body could not be read", "invalid_body")
          )
      }
    }
    if (reason._tag === "Die") {
      const defect = reason.defect
      if (HttpServerResponse.isHttpServerResponse(defect)) return Effect.succeed(defect)
      if (HttpApiError.HttpApiSchemaError.is(defect) && defect.kind in schemaRoot) {
        const root = schemaRoot[defect.kind as keyof typeof schemaRoot]
        return Effect.succeed(
          errorResponse(400, `invalid request ${root}`, "invalid_request", issueDetails(defect.cause.issue, root))
        )
      }
      if (HttpApiError.HttpApiPayloadTooLarge.is(defect)) {
        return Effect.succeed(errorResponse(413, "request body too large", "payload_too_large"))
      }
    }
  }
  if (cause.reasons.every((r) => r._tag === "Interrupt")) return Effect.failCause(cause as Cause.Cause<unhandled>)
  return Effect.withFiber((fiber) => {
    // Telemetry: the request's server span carries it as an exception event (spec 8.3).
    recordRequestException(fiber, cause)
    return Effect.logError("unhandled failure while serving a request", cause).pipe(Effect.as(internalError))
  })
}

/**
 * The standard body for the plain-text or empty error responses HttpApi itself answers: 415 for a
 * content type the route does not accept, 413 for a streamed payload over its cap. Recognised by
 * their exact shape, so an upstream's own answer relayed by the proxy is never rewritten.
 */
export const standardizeFrameworkResponse = (
  response: HttpServerResponse.HttpServerResponse
): HttpServerResponse.HttpServerResponse => {
  const body = response.body
  if (
    response.status === 415 &&
    body._tag === "Uint8Array" &&
    body.contentType.startsWith("text/plain") &&
    body.text?.startsWith("Unsupported content-type: ") === true
  ) {
    return errorResponse(415, "unsupported content type: send application/json", "unsupported_media_type")
  }
  if (response.status === 413 && body._tag === "Empty" && response.headers.connection === "close") {
    return HttpServerResponse.setHeader(
      errorResponse(413, "request body too large", "payload_too_large"),
      "connection",
      "close"
    )
  }
  return response
}

/** Global router middleware mapping every escaped failure to the standard error body. */
export const layerErrorHandling = (
  notFound: NotFoundPolicy = defaultNotFound
): Layer.Layer<never, never, HttpRouter.HttpRouter> =>
  HttpRouter.middleware(
    (effect): Effect.Effect<HttpServerResponse.HttpServerResponse, unhandled> =>
      Effect.catchCause(Effect.map(effect, standardizeFrameworkResponse), (cause) => fromCause(cause, notFound)),
    { global: true }
  )
