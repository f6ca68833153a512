/**
 * Strict input on every route of every service (issue 13, SECURITY.md "Limits on every input"):
 * a path segment or query parameter that is not valid percent-encoded UTF-8 or holds NUL, and a
 * JSON body with a NUL or lone surrogate in any key or string or nested deeper than
 * `maxJsonDepth`, answer 400 with the standard body naming the field — before any handler reads
 * them, so nothing is stored and no store error becomes a 500.
 *
 * The body is checked when a route reads it as text (every HttpApi JSON payload does, after the
 * authentication middleware), so an anonymous caller's body is never read and a streamed body
 * (`_proxy_raw`) is never buffered.
 */
import { Effect, type Layer, Schema } from "effect"
import { HttpRouter, HttpServerRequest, type HttpServerResponse } from "effect/http"
import { HttpApiError } from "effect/http-api"
import type { ErrorDetail } from "@svc/domain/Errors"
import { jsonProblem, jsonProblemIssue, textProblem } from "@svc/domain/StrictInput"
import type { unhandled } from "effect/Types"
import { errorResponse } from "./ErrorHandling.ts"

const decode = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

const badEncoding = "must be valid percent-encoded UTF-8"

/** The first problem in a request target (`/path?query`): its path segments, then its query. */
export const urlProblem = (url: string): ErrorDetail | undefined => {
  const hash = url.indexOf("#")
  const target = hash === -1 ? url : url.slice(0, hash)
  const mark = target.indexOf("?")
  const path = mark === -1 ? target : target.slice(0, mark)
  for (const segment of path.split("/")) {
    const decoded = decode(segment)
    if (decoded === undefined) return { field: "path", message: badEncoding }
    const problem = textProblem(decoded)
    if (problem !== undefined) return { field: "path", message: problem }
  }
  if (mark === -1) return undefined
  for (const pair of target.slice(mark + 1).split("&")) {
    if (pair === "") continue
    const equals = pair.indexOf("=")
    const rawKey = equals === -1 ? pair : pair.slice(0, equals)
    const key = decode(rawKey.replaceAll("+", " "))
    if (key === undefined) return { field: "query", message: `a parameter name ${badEncoding}` }
    const keyProblem = textProblem(key)
    if (keyProblem !== undefined) return { field: "query", message: `a parameter name ${keyProblem}` }
    const value = equals === -1 ? "" : decode(pair.slice(equals + 1).replaceAll("+", " "))
    if (value === undefined) return { field: `query.${key}`, message: badEncoding }
    const problem = textProblem(value)
    if (problem !== undefined) return { field: `query.${key}`, message: problem }
  }
  return undefined
}

const isJson = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const mediaType = (request.headers["content-type"] ?? "application/json").split(";")[0]!.trim().toLowerCase()
  return mediaType === "application/json" || mediaType.endsWith("+json")
}

/** Fails (as the payload decoding failure HttpApi itself raises) when a parsed JSON body is refused. */
const checkedJson = <A>(value: A): Effect.Effect<A> => {
  const problem = jsonProblem(value)
  return problem === undefined
    ? Effect.succeed(value)
    : Effect.die(
        new HttpApiError.HttpApiSchemaError({
          kind: "Payload",
          cause: new Schema.SchemaError(jsonProblemIssue(problem))
        })
      )
}

const checkedText = (text: string): Effect.Effect<string> => {
  if (text === "") return Effect.succeed(text)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return Effect.succeed(text) // not JSON: the route's own decoding answers 400
  }
  return Effect.as(checkedJson(parsed), text)
}

/** `request` whose `text` and `json` are checked by {@link checkedJson}; everything else is the request's own. */
const guardBody = (request: HttpServerRequest.HttpServerRequest): HttpServerRequest.HttpServerRequest => {
  const text = Effect.flatMap(request.text, checkedText)
  const json = Effect.flatMap(request.json, checkedJson)
  return new Proxy(request, {
    get(target, property) {
      if (property === "text") return text
      if (property === "json") return json
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === "function" ? value.bind(target) : value
    }
  })
}

/** Global router middleware applying the checks above to every request. */
export const layerInputGuard: Layer.Layer<never, never, HttpRouter.HttpRouter> = HttpRouter.middleware(
  (effect): Effect.Effect<HttpServerResponse.HttpServerResponse, unhandled, HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(
      HttpServerRequest.HttpServerRequest,
      (
        request
      ): Effect.Effect<HttpServerResponse.HttpServerResponse, unhandled, HttpServerRequest.HttpServerRequest> => {
        const problem = urlProblem(request.url)
        if (problem !== undefined) {
          return Effect.succeed(errorResponse(400, "invalid request", "invalid_request", [problem]))
        }
        return isJson(request)
          ? Effect.provideService(effect, HttpServerRequest.HttpServerRequest, guardBody(request))
          : effect
      }
    ),
  { global: true }
)
