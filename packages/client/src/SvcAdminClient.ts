/**
 * The typed client of svc's admin-api (docs/client.md): built from the domain's `AdminApiV1`
 * declaration as `SvcClient` is from `ApiV1` — every resource route of the api plus the admin-only
 * ones (search) — so paths, queries, payloads, answers and errors are typed and decoded by the
 * schemas the server decodes with. Published in `@svc/client` (no server code).
 *
 * The admin-api speaks TLS only. Against a certificate the runtime trusts, `SvcAdminClient.layer`
 * uses `fetch`; against svc's self-signed development certificate (`.svc/tls/admin-api.crt`)
 * provide an `HttpClient` that trusts it to `SvcAdminClient.layerNoDeps`, e.g.
 * `NodeHttpClient.layerNodeHttpOptions({ ca })` of `@effect/platform-node`.
 */
import { AdminApiV1 } from "@svc/domain/http/Apis"
import { Context, Layer } from "effect"
import { FetchHttpClient, type HttpClient } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { bearerAuthentication, type SvcClientOptions } from "./SvcClient.ts"

/** The declaration the admin client is built from: the admin-api's routes, grouped as the client's methods. */
export { AdminApiV1 }

/** Where the admin-api is (`https://127.0.0.1:8082`) and the bearer token of each request. */
export type SvcAdminClientOptions = SvcClientOptions

/** The typed client of one svc admin-api; every request carries the configured bearer token. */
export class SvcAdminClient extends Context.Service<SvcAdminClient, HttpApiClient.ForApi<typeof AdminApiV1>>()(
  "@svc/client/SvcAdminClient"
) {
  /** The client over a given `HttpClient` (one that trusts the admin-api's certificate). */
  static readonly layerNoDeps = (
    options: SvcAdminClientOptions
  ): Layer.Layer<SvcAdminClient, never, HttpClient.HttpClient> =>
    Layer.effect(SvcAdminClient, HttpApiClient.make(AdminApiV1, { baseUrl: options.baseUrl })).pipe(
      Layer.provide(bearerAuthentication(options.token))
    )

  /** The client over the runtime's `fetch` (the admin-api's certificate must be one it trusts). */
  static readonly layer = (options: SvcAdminClientOptions): Layer.Layer<SvcAdminClient> =>
    SvcAdminClient.layerNoDeps(options).pipe(Layer.provide(FetchHttpClient.layer))
}
