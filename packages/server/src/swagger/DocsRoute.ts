import type { Layer } from "effect"
import type { HttpRouter } from "effect/http"
import { type HttpApi, type HttpApiGroup, HttpApiScalar } from "effect/http-api"

/**
 * `GET /docs`: the browsable API reference (Scalar) of `api`, embedding the same OpenAPI document
 * that `/openapi.json` serves. Works air-gapped: the Scalar script is the copy bundled in the pinned
 * `effect` package and inlined into the page, and the default web fonts (loaded from Scalar's CDN)
 * are off. Like `/openapi.json`, the page needs no token; calls made from it carry the token the
 * reader enters.
 */
export const layer = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>
): Layer.Layer<never, never, HttpRouter.HttpRouter> =>
  HttpApiScalar.layer(api, { path: "/docs", scalar: { withDefaultFonts: false } })
