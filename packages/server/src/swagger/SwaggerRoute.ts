import { Effect, type Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import type { Swagger2Document } from "./Swagger2.ts"
import { renderDocument } from "./SwaggerFiles.ts"

/**
 * Serves a Swagger 2.0 document at `GET /swagger.json` (spec 1, 9.2), byte-identical to the committed file.
 * A function is called at the first request (once): a process never asked for its Swagger never builds it.
 */
export const layer = (
  doc: Swagger2Document | (() => Swagger2Document),
  path: `/${string}` = "/swagger.json"
): Layer.Layer<never, never, HttpRouter.HttpRouter> => {
  let body: string | undefined
  return HttpRouter.add(
    "GET",
    path,
    Effect.sync(() => {
      if (body === undefined) body = renderDocument(typeof doc === "function" ? doc() : doc)
      return HttpServerResponse.text(body, { contentType: "application/json" })
    })
  )
}
