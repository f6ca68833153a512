/**
 * A host application's typed client of svc's api (docs/client.md, shown there verbatim): built
 * from the domain package's `ApiV1` declaration, so every path, query, payload, answer and error is
 * typed and decoded by the same schemas the server uses.
 */
import { ApiV1 } from "@svc/domain/http/Apis"
import { Authentication } from "@svc/domain/http/Security"
import { Context, Effect, Layer } from "effect"
import { FetchHttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"

/** The typed client of one svc api; every request carries `token` as its bearer token. */
export class SvcClient extends Context.Service<SvcClient, HttpApiClient.ForApi<typeof ApiV1>>()("host/SvcClient") {
  static readonly layer = (options: { readonly baseUrl: string; readonly token: string }) =>
    Layer.effect(SvcClient, HttpApiClient.make(ApiV1, { baseUrl: options.baseUrl })).pipe(
      Layer.provide(
        HttpApiMiddleware.layerClient(Authentication, ({ next, request }) =>
          next(HttpClientRequest.bearerToken(request, options.token))
        )
      ),
      Layer.provide(FetchHttpClient.layer)
    )
}

/**
 * Lists the configured connections of one connector, then sends `GET url` through the first one
 * with its credentials applied (`_proxy`): the upstream's status, headers and body come back in an
 * envelope. A 429 from a rate limit or a cool-down fails with the typed `RateLimited` error.
 */
export const listAndProxy = Effect.fn("listAndProxy")(function* (connectorId: string, url: string) {
  const svc = yield* SvcClient
  const page = yield* svc.connections.list({
    query: { connectorId, state: "configured", order: "createdAt ASC", limit: 10 }
  })
  const first = page.items[0]
  if (first === undefined) return { connections: page.items, answer: undefined }
  const answer = yield* svc.proxy.proxy({
    params: { id: first.id },
    payload: { method: "GET", url, labels: { feature: "example" } }
  })
  return { connections: page.items, answer }
})
