/**
 * Marketplace browser-session routes of the public service (spec 5.9): `GET /marketplace/login`
 * turns a signed, short-lived, single-use login URL into a browser session; `POST
 * /marketplace/logout` ends it; `GET /marketplace/session` describes it. The login token is never
 * echoed (pages, redirects, logs); every answer is `Cache-Control: no-store`.
 */
import { Clock, Context, DateTime, Effect, type Layer } from "effect"
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
import { resolveReturnUrl } from "../auth/ReturnUrls.ts"
import { errorResponse } from "./ErrorHandling.ts"
import { requireBrowserSession, sessionActor } from "./PublicAuthentication.ts"

/** Longest lifetime (`exp − iat`, and `exp − now`) a login URL token may have: 15 minutes. */
export const maxLoginTokenLifetimeSeconds = 15 * 60

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

    const refuse = (code: string) =>
      Effect.as(Effect.logInfo("marketplace login refused").pipe(Effect.annotateLogs({ code })), badLink())

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
      const actor = yield* authenticator.authenticate(token, "public")
      const problem = loginTokenProblem(token, Math.floor((yield* Clock.currentTimeMillis) / 1000))
      if (problem !== undefined) return yield* refuse(problem)
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
          Unauthorized: (e) => refuse(e.code),
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
