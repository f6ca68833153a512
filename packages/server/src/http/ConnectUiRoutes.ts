/**
 * The Connect UI on the public service (docs/ui.md): the end user's screens for connecting
 * accounts, served from the built bundle under `/connect/`.
 *
 * - `GET /connect/` (and `/connect/oauth-return`, where an OAuth2 popup lands): the page, framable
 *   only by `host_application.allowed_origins` (CSP `frame-ancestors`);
 * - `GET /connect/error?code=…`: where a refused marketplace login bound for the Connect UI lands
 *   (framable by any origin: it reads no session and acts on nothing);
 * - `GET /connect/assets/*`: content-hashed scripts and styles, immutable;
 * - `GET /connect/config.json`: the host origins the page may report completion to with
 *   `postMessage` (never `*`), and the public base URL.
 *
 * The page calls the public service's API with the browser session (`svc_session` cookie, XSRF
 * header on writes); without a session it sends the user to `/marketplace/login`.
 */
import { Effect, type Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { allowedOrigins } from "../auth/ReturnUrls.ts"
import { SvcConfig } from "../config/SvcConfig.ts"
import { errorResponse } from "./ErrorHandling.ts"
import { assetResponse, indexResponse, loadBundle, pathBelow } from "./UiAssets.ts"

/** Where the Connect UI lives on the public service. */
export const connectUiPath = "/connect/"

/** Pages of the single-page application (everything else below `/connect/` is an asset or 404). */
const pages: ReadonlySet<string> = new Set(["", "index.html", "oauth-return"])

/** The Connect UI routes; mount on the public service's router only. */
export const ConnectUiRoutes: Layer.Layer<never, never, HttpRouter.HttpRouter | SvcConfig> = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const config = yield* SvcConfig
    const bundle = loadBundle("connect")
    const origins = allowedOrigins(config)
    const publicOrigin = new URL(config.publicService.baseUrl).origin
    const hostOrigins = [...origins].filter((origin) => origin !== publicOrigin)
    const clientConfig = { hostOrigins, publicBaseUrl: config.publicService.baseUrl }
    const notFound = errorResponse(404, "not found", "not_found")

    // `/connect/*` also matches `/connect` itself (the page).
    yield* router.add("GET", `${connectUiPath}*`, (request) => {
      const relative = pathBelow(request.url, connectUiPath) ?? ""
      if (pages.has(relative)) return Effect.succeed(indexResponse(bundle, [...origins]))
      // The in-frame error page of a refused login (docs/ui.md) acts on no session, so any page may
      // frame it: a host whose origin is not allowed learns why its frame stays empty.
      if (relative === "error") return Effect.succeed(indexResponse(bundle, ["*"]))
      if (relative === "config.json") {
        return Effect.succeed(HttpServerResponse.jsonUnsafe(clientConfig, { headers: { "Cache-Control": "no-store" } }))
      }
      return Effect.succeed(assetResponse(bundle, relative) ?? notFound)
    })
  })
)
