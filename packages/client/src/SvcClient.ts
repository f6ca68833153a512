/**
 * The typed client of svc's api for host applications (docs/client.md): built from the domain's
 * `ApiV1` declaration, so every path, query, payload, answer and error is typed and decoded by the
 * schemas the server decodes with. Published as `@svc/client` (built JS and types, no server code).
 */
import { ApiV1 } from "@svc/domain/http/Apis"
import { Authentication } from "@svc/domain/http/Security"
import { Context, Effect, Layer } from "effect"
import { FetchHttpClient, type HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"

/** Where the api is and the bearer token of each request: a fixed token, or an effect run per request (a fresh short-lived token each time). */
export interface SvcClientOptions {
  /** The api service, e.g. `http://127.0.0.1:8081`. */
  readonly baseUrl: string
  readonly token: string | Effect.Effect<string>
}

/** The `Authentication` middleware of a client: every request carries the bearer token (also SvcAdminClient's). */
export const bearerAuthentication = (token: SvcClientOptions["token"]) => {
  const bearer = typeof token === "string" ? Effect.succeed(token) : token
  return HttpApiMiddleware.layerClient(Authentication, ({ next, request }) =>
    Effect.flatMap(bearer, (value) => next(HttpClientRequest.bearerToken(request, value)))
  )
}

/** The declaration the client is built from: the api service's routes, grouped as the client's methods. */
export { ApiV1 }

/** The typed client of one svc api; every request carries the configured bearer token. */
export class SvcClient extends Context.Service<SvcClient, HttpApiClient.ForApi<typeof ApiV1>>()(
  "@svc/client/SvcClient"
) {
  /** The client over a given `HttpClient` (provide `FetchHttpClient.layer`, an undici client, a test client…). */
  static readonly layerNoDeps = (options: SvcClientOptions): Layer.Layer<SvcClient, never, HttpClient.HttpClient> =>
    Layer.effect(SvcClient, HttpApiClient.make(ApiV1, { baseUrl: options.baseUrl })).pipe(
      Layer.provide(bearerAuthentication(options.token))
    )

  /** The client over the runtime's `fetch`. */
  static readonly layer = (options: SvcClientOptions): Layer.Layer<SvcClient> =>
    SvcClient.layerNoDeps(options).pipe(Layer.provide(FetchHttpClient.layer))
}
