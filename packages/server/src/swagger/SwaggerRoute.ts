import type { Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import type { Swagger2Document } from "./Swagger2.ts"
import { renderDocument } from "./SwaggerFiles.ts"

/** Serves a Swagger 2.0 document at `GET /swagger.json` (spec 1, 9.2), byte-identical to the committed file. */
export const layer = (
  doc: Swagger2Document,
  path: `/${string}` = "/swagger.json"
): Layer.Layer<never, never, HttpRouter.HttpRouter> =>
  HttpRouter.add("GET", path, HttpServerResponse.text(renderDocument(doc), { contentType: "application/json" }))
