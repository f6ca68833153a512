/**
 * The public service's OAuth2 browser routes (spec 1, 5.9):
 *
 * - `GET /oauth2/authorize?ticket=…`: the redirect URL `_initiate`/`_reauthorize` answered; sends
 *   the browser to the provider with a fresh single-use `state`, PKCE S256, the definition's
 *   scopes and the service's `redirect_uri`, and sets a cookie binding the flow to this browser;
 * - `GET /oauth2/callback?code=…&state=…` (the `redirect_uri`): completes the authorization and
 *   sends the browser back to the application's return URL, or shows a plain page.
 *
 * Every answer is `no-store` and sends no Referer; errors never show a code, state or token.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerRequest, type HttpServerResponse } from "effect/http"
import { SvcConfig } from "../config/SvcConfig.ts"
import { type BrowserOutcome, callbackPath, ConnectionAuthorization } from "../connections/ConnectionAuthorization.ts"
import { htmlPage, isSecureBaseUrl, redirectTo, serializeCookie, withSetCookies } from "./BrowserPages.ts"

const single = (params: Readonly<Record<string, string | ReadonlyArray<string>>>, name: string) => {
  const value = params[name]
  return typeof value === "string" ? value : undefined
}

const respond = (outcome: BrowserOutcome, secure: boolean): HttpServerResponse.HttpServerResponse => {
  if (outcome._tag === "Page") return htmlPage(outcome.status, outcome.title, outcome.message)
  const cookies = outcome.setCookies.map((cookie) =>
    serializeCookie(cookie.name, cookie.value, {
      httpOnly: true,
      secure,
      maxAgeSeconds: cookie.maxAge,
      path: cookie.path,
      sameSite: "Lax"
    })
  )
  return withSetCookies(redirectTo(outcome.url, { status: 302 }), cookies)
}

/** The OAuth2 authorize and callback routes (requires `ConnectionAuthorization` and `SvcConfig`). */
export const layer: Layer.Layer<never, never, HttpRouter.HttpRouter | ConnectionAuthorization | SvcConfig> =
  Layer.unwrap(
    Effect.gen(function* () {
      const authorization = yield* ConnectionAuthorization
      const config = yield* SvcConfig
      const secure = isSecureBaseUrl(config.publicService.baseUrl)
      return Layer.mergeAll(
        HttpRouter.add(
          "GET",
          "/oauth2/authorize",
          Effect.gen(function* () {
            const params = yield* HttpServerRequest.ParsedSearchParams
            return respond(yield* authorization.start(single(params, "ticket")), secure)
          })
        ),
        HttpRouter.add(
          "GET",
          callbackPath,
          Effect.gen(function* () {
            const request = yield* HttpServerRequest.HttpServerRequest
            const params = yield* HttpServerRequest.ParsedSearchParams
            const outcome = yield* authorization.complete(
              { state: single(params, "state"), code: single(params, "code"), error: single(params, "error") },
              request.cookies
            )
            return respond(outcome, secure)
          })
        )
      )
    })
  )
