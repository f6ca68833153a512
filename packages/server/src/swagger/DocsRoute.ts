import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { type HttpApi, type HttpApiGroup, HttpApiScalar } from "effect/http-api"

/**
 * `GET /docs`: the browsable API reference (Scalar) of `api`, embedding the same OpenAPI document
 * that `/openapi.json` serves. Works air-gapped: the Scalar script is the copy bundled in the pinned
 * `effect` package and inlined into the page, and the default web fonts (loaded from Scalar's CDN)
 * are off. Like `/openapi.json`, the page needs no token; calls made from it carry the token the
 * reader enters.
 *
 * The page is made at its first request, not at start: `HttpApiScalar.layer` loads Scalar's
 * 3.2 MB script when it is built, and a process that never serves `/docs` (most api pods) would
 * keep that source in memory for nothing (docs/performance.md "Memory"). The first request builds
 * Scalar's route on a router of its own, in the scope of this route's layer, and every request
 * is answered by it.
 */
export const layer = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>
): Layer.Layer<never, never, HttpRouter.HttpRouter> =>
  HttpRouter.use(
    Effect.fnUntraced(function* (router) {
      const scope = yield* Effect.scope
      const page = yield* Effect.cached(
        Effect.gen(function* () {
          const inner = yield* HttpRouter.make
          yield* Layer.buildWithScope(
            HttpApiScalar.layer(api, { path: "/docs", scalar: { withDefaultFonts: false } }).pipe(
              Layer.provide(Layer.succeed(HttpRouter.HttpRouter, inner))
            ),
            scope
          )
          return inner.asHttpEffect()
        })
      )
      // Scalar's route answers every request this route matches: the inner router cannot miss.
      yield* router.add("GET", "/docs", Effect.orDie(Effect.flatten(page)))
    })
  )
