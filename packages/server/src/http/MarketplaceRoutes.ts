/**
 * Marketplace browser-session routes of the public service (spec 5.9): `GET /marketplace/login`
 * turns a signed, short-lived, single-use login URL into a browser session; `POST
 * /marketplace/logout` ends it; `GET /marketplace/session` describes it. The login token is never
 * echoed (pages, redirects, logs); every answer is `Cache-Control: no-store`. A framed login for
 * the Connect UI without a Referer is first answered with the Connect UI's frame check page, which
 * reports the frame's ancestor origin in `frame_origin` (docs/ui.md "When the page cannot open").
 */
import { Clock, Context, Data, DateTime, Effect, type Layer } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { decodeJwt } from "jose"
import type { Forbidden, ServiceUnavailable, Unauthorized } from "@svc/domain/Errors"
import { SvcConfig } from "../config/SvcConfig.ts"
import { ActorDirectory } from "../resources/ActorDirectory.ts"
import { Authenticator } from "../auth/Authenticator.ts"
import { BrowserSessions } from "../auth/BrowserSessions.ts"
import { clockToleranceSeconds } from "../auth/TokenVerifier.ts"
import {
  clearSessionCookies,
  htmlPage,
  isSecureBaseUrl,
  redirectTo,
  sessionCookie,
  sessionCookieName,
  withSetCookies,
  xsrfCookie
} from "./BrowserPages.ts"
import { allowedOrigins, resolveReturnUrl } from "../auth/ReturnUrls.ts"
import { connectUiPath } from "./ConnectUiRoutes.ts"
import { errorResponse } from "./ErrorHandling.ts"
import { indexResponse, loadBundle } from "./UiAssets.ts"
import { requireBrowserSession, sessionActor } from "./PublicAuthentication.ts"

/** Longest lifetime (`exp − iat`, and `exp − now`) a login URL token may have: 15 minutes. */
export const maxLoginTokenLifetimeSeconds = 15 * 60

/** The query parameter the Connect UI's frame check adds to a login URL: the frame's ancestor origin, or empty. */
export const frameOriginParam = "frame_origin"

/** Paths of the routes. */
export const marketplacePaths = {
  login: "/marketplace/login",
  logout: "/marketplace/logout",
  session: "/marketplace/session"
} as const

const noStore = { "Cache-Control": "no-store" }

const badLink = () =>
  htmlPage(401, "Sign-in link not accepted", "This sign-in link is invalid, has expired or was already used.")

const jsonError = (error: Unauthorized | Forbidden | ServiceUnavailable) =>
  Effect.succeed(
    HttpServerResponse.setHeaders(
      errorResponse(
        error._tag === "Unauthorized" ? 401 : error._tag === "Forbidden" ? 403 : 503,
        error.error,
        error.code
      ),
      noStore
    )
  )

const queryOf = (url: string): URLSearchParams => {
  const at = url.indexOf("?")
  return new URLSearchParams(at === -1 ? "" : url.slice(at + 1))
}

/** A login whose `return_to` is the Connect UI, and the host origin its URL names (`host_origin`). */
interface ConnectUiLogin {
  readonly hostOrigin: string | undefined
}

/** The token of a login was refused with `code` (an Unauthorized code). */
class LoginRefused extends Data.TaggedError("LoginRefused")<{
  readonly code: string
  readonly connectUi: ConnectUiLogin | undefined
}> {}

const originOf = (text: string | undefined): string | undefined => {
  if (text === undefined || !URL.canParse(text)) return undefined
  const origin = new URL(text).origin
  return origin === "null" ? undefined : origin
}

/** The Connect UI login `returnTo` describes (an allowed URL below `/connect/` on the public origin), else undefined. */
const connectUiLogin = (returnTo: string | undefined, publicOrigin: string): ConnectUiLogin | undefined => {
  if (returnTo === undefined) return undefined
  const url = new URL(returnTo)
  if (url.origin !== publicOrigin || !url.pathname.startsWith(connectUiPath)) return undefined
  return { hostOrigin: originOf(url.searchParams.get("host_origin") ?? undefined) }
}

/**
 * The code the Connect UI's error page shows for a refused login (docs/ui.md): `unknown_actor`,
 * `link_expired`, `origin_not_allowed`, `origin_unknown`, or `link_invalid` for every other refusal (bad signature,
 * replayed nonce, a token that is not a login token).
 */
export const connectErrorCode = (code: string): string =>
  code === "unknown_actor" || code === "origin_not_allowed" || code === "origin_unknown"
    ? code
    : code === "token_expired"
      ? "link_expired"
      : "link_invalid"

/** `/connect/error?code=…[&host_origin=…]` on the public origin. */
const connectErrorUrl = (publicOrigin: string, code: string, hostOrigin: string | undefined): string => {
  const url = new URL(`${connectUiPath}error`, publicOrigin)
  url.searchParams.set("code", connectErrorCode(code))
  if (hostOrigin !== undefined) url.searchParams.set("host_origin", hostOrigin)
  return url.href
}

/** Why a verified token is still not a login token, or undefined when it is one (also the admin UI login, AdminUiRoutes.ts). */
export const loginTokenProblem = (token: string, nowSeconds: number): string | undefined => {
  let payload: ReturnType<typeof decodeJwt>
  try {
    payload = decodeJwt(token)
  } catch {
    return "login_token_malformed"
  }
  if (typeof payload.exp !== "number") return "login_token_without_expiry"
  if (payload.exp - nowSeconds > maxLoginTokenLifetimeSeconds + clockToleranceSeconds) return "login_token_too_long"
  if (typeof payload.iat === "number" && payload.exp - payload.iat > maxLoginTokenLifetimeSeconds) {
    return "login_token_too_long"
  }
  // A login URL travels through browser history and logs: it must be single use.
  if (typeof payload.nonce !== "string" || payload.nonce === "") return "login_token_without_nonce"
  return undefined
}

/**
 * The three routes, reading `publicService` and `hostApplication` from `SvcConfig`. Mount on the
 * public service's router only.
 */
export const MarketplaceRoutes: Layer.Layer<
  never,
  never,
  HttpRouter.HttpRouter | Authenticator | BrowserSessions | ActorDirectory | SvcConfig
> = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const config = yield* SvcConfig
    const authenticator = yield* Authenticator
    const sessions = yield* BrowserSessions
    const context = Context.make(BrowserSessions, sessions).pipe(Context.add(ActorDirectory, yield* ActorDirectory))
    const secure = isSecureBaseUrl(config.publicService.baseUrl)
    const maxAgeSeconds = Math.floor(config.publicService.sessionTtlMs / 1000)

    const publicOrigin = new URL(config.publicService.baseUrl).origin
    const origins = allowedOrigins(config)

    /**
     * Where a refusal goes: a login bound for the Connect UI lands on its in-frame error page
     * (`/connect/error?code=…`, which tells the host with an `svc:connect:error` message); any
     * other login gets the plain refusal page.
     */
    const refuse = (code: string, connectUi: ConnectUiLogin | undefined) =>
      Effect.as(
        Effect.logInfo("marketplace login refused").pipe(Effect.annotateLogs({ code })),
        connectUi === undefined ? badLink() : redirectTo(connectErrorUrl(publicOrigin, code, connectUi.hostOrigin))
      )

    /**
     * A framed Connect UI login whose framing page sent no Referer: the Connect UI's frame check
     * page (any page may frame it; it reads no session and uses no token) asks the browser for the
     * frame's ancestor origin and loads this same URL again with `frame_origin` (empty when the
     * browser does not tell), so a foreign framer gets the in-frame error page, not a blank frame.
     */
    const connectBundle = loadBundle("connect")
    const frameCheck = () => HttpServerResponse.setHeaders(indexResponse(connectBundle, ["*"]), noStore)

    const initiateSession = (returnTo: string | undefined) => {
      const initiate = config.hostApplication.initiate_session_url
      if (initiate === undefined)
        return Effect.succeed(htmlPage(401, "Sign-in required", "Open this page from the application to sign in."))
      if (!URL.canParse(initiate) || !/^https?:$/.test(new URL(initiate).protocol)) {
        return Effect.as(
          Effect.logWarning("host_application.initiate_session_url is not an absolute http(s) URL"),
          htmlPage(401, "Sign-in required", "Open this page from the application to sign in.")
        )
      }
      const url = new URL(initiate)
      if (returnTo !== undefined) url.searchParams.set("return_to", returnTo)
      return Effect.succeed(redirectTo(url.href, { status: 302 }))
    }

    const login = Effect.fnUntraced(function* (request: HttpServerRequest.HttpServerRequest) {
      const query = queryOf(request.url)
      const token = query.get("token") ?? ""
      const returnToText = query.get("return_to") ?? ""
      const returnTo = returnToText === "" ? undefined : resolveReturnUrl(returnToText, config)
      if (token === "") return yield* initiateSession(returnTo)
      // Checked before the token is used, so a refused return_to leaves the link usable and no session.
      if (returnToText !== "" && returnTo === undefined) {
        return htmlPage(400, "Sign-in link not accepted", "The page to return to is not allowed.")
      }
      const connectUi = connectUiLogin(returnTo, publicOrigin)
      // A Connect UI framed by (or opened for) an origin that is not allowed would be a blank
      // frame: say so in the frame instead, before the token is used. The framing page is the
      // iframe request's Referer or, without one, what the frame check reported (`frame_origin`).
      const framed = request.headers["sec-fetch-dest"] === "iframe"
      const reported = query.get(frameOriginParam)
      const framedBy = framed ? (originOf(request.headers.referer) ?? originOf(reported ?? undefined)) : undefined
      if (connectUi !== undefined && framed && framedBy === undefined) {
        if (reported === null) return frameCheck()
        if (connectUi.hostOrigin === undefined) return yield* refuse("origin_unknown", connectUi)
      }
      const claimed = [connectUi?.hostOrigin, framedBy].filter((o): o is string => o !== undefined)
      if (connectUi !== undefined && claimed.some((origin) => origin !== publicOrigin && !origins.has(origin))) {
        return yield* refuse("origin_not_allowed", { hostOrigin: framedBy ?? connectUi.hostOrigin })
      }
      const actor = yield* authenticator
        .authenticate(token, "public")
        .pipe(Effect.catchTag("Unauthorized", (e) => Effect.fail(new LoginRefused({ code: e.code, connectUi }))))
      const problem = loginTokenProblem(token, Math.floor((yield* Clock.currentTimeMillis) / 1000))
      if (problem !== undefined) return yield* refuse(problem, connectUi)
      const previous = request.cookies[sessionCookieName]
      if (previous !== undefined) yield* Effect.ignore(sessions.revoke(previous))
      const created = yield* sessions.create({
        actorId: actor.id,
        externalId: actor.externalId,
        restrictions: actor.restrictions,
        ttlMs: config.publicService.sessionTtlMs
      })
      const cookies = [
        sessionCookie(created.sessionId, maxAgeSeconds, secure),
        xsrfCookie(created.xsrfToken, maxAgeSeconds, secure)
      ]
      const response =
        returnTo === undefined
          ? htmlPage(200, "Signed in", "You are signed in. You can close this page.")
          : redirectTo(returnTo, { status: 303 })
      return withSetCookies(response, cookies)
    })

    yield* router.add("GET", marketplacePaths.login, (request) =>
      login(request).pipe(
        Effect.catchTags({
          LoginRefused: (e) => refuse(e.code, e.connectUi),
          ServiceUnavailable: () =>
            Effect.succeed(
              htmlPage(503, "Service unavailable", "Signing in is not possible right now; try again later.")
            )
        })
      )
    )

    yield* router.add("POST", marketplacePaths.logout, (request) =>
      requireBrowserSession(request).pipe(
        Effect.flatMap(({ sessionId }) => sessions.revoke(sessionId)),
        Effect.as(
          withSetCookies(HttpServerResponse.empty({ status: 204, headers: noStore }), clearSessionCookies(secure))
        ),
        Effect.provideContext(context),
        Effect.catchTags({ Unauthorized: jsonError, Forbidden: jsonError, ServiceUnavailable: jsonError })
      )
    )

    yield* router.add("GET", marketplacePaths.session, (request) =>
      Effect.gen(function* () {
        const { session } = yield* requireBrowserSession(request)
        const actor = yield* sessionActor(session)
        return HttpServerResponse.jsonUnsafe(
          {
            actorId: actor.id,
            externalId: actor.externalId,
            expiresAt: DateTime.formatIso(DateTime.makeUnsafe(session.expiresAt))
          },
          { headers: noStore }
        )
      }).pipe(
        Effect.provideContext(context),
        Effect.catchTags({ Unauthorized: jsonError, Forbidden: jsonError, ServiceUnavailable: jsonError })
      )
    )
  })
)
