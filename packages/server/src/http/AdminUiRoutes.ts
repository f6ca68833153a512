/**
 * The admin UI on the admin-api (docs/ui.md): the built bundle under `/ui/`, its browser sessions
 * and the `Authentication` middleware that accepts them besides bearer tokens.
 *
 * Sessions: `GET /ui/login?token=…` takes a signed login URL (an actor token for `admin-api` with a
 * single-use `nonce` and at most 15 minutes of life, as for the marketplace); without a token it
 * sends the browser to `admin_api.ui.initiate_session_url` (with `return_to`) when configured, else
 * to the sign-in form, where `POST /ui/session {"token"}` (JSON only, so no cross-site form can
 * post it) takes a pasted admin token. Either sets `svc_admin_session` (HttpOnly, Secure,
 * SameSite=Strict) and `svc_admin_xsrf` (readable; echoed in `X-XSRF-TOKEN` on every write). The
 * sessions live in the counter store under their own key prefix, so a marketplace session of the
 * public service is never an admin session. `GET /ui/session` describes it, `POST /ui/logout` ends it.
 */
import { Clock, Context, DateTime, Effect, Layer, Option } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { Forbidden, type ServiceUnavailable, Unauthorized } from "@svc/domain/Errors"
import { type AuthenticatedActor, Authentication } from "@svc/domain/http/Security"
import { Authenticator } from "../auth/Authenticator.ts"
import { type BrowserSession, BrowserSessions, xsrfTokenMatches } from "../auth/BrowserSessions.ts"
import { SvcConfig } from "../config/SvcConfig.ts"
import { ActorDirectory } from "../resources/ActorDirectory.ts"
import { CounterStore } from "../stores/CounterStore.ts"
import { redirectTo, serializeCookie, withSetCookies, xsrfHeaderName } from "./BrowserPages.ts"
import { errorResponse } from "./ErrorHandling.ts"
import { loginTokenProblem } from "./MarketplaceRoutes.ts"
import { bearerOrSession, sessionActor, xsrfExemptMethods } from "./PublicAuthentication.ts"
import { assetResponse, indexResponse, loadBundle, pathBelow } from "./UiAssets.ts"

/** Where the admin UI lives on the admin-api. */
export const adminUiPath = "/ui/"

/** HttpOnly cookie of an admin UI session (not `svc_session`: cookies do not tell ports apart). */
export const adminSessionCookieName = "svc_admin_session"

/** Script-readable cookie with the admin session's XSRF token. */
export const adminXsrfCookieName = "svc_admin_xsrf"

/** Counter-store key prefix of admin sessions (marketplace sessions have none). */
const adminSessionKeyPrefix = "admin-ui:"

/** Browser sessions of the admin UI: the marketplace's session logic over a prefixed key space. */
export class AdminUiSessions extends Context.Service<AdminUiSessions, BrowserSessions["Service"]>()(
  "@svc/server/http/AdminUiSessions"
) {
  static readonly layer: Layer.Layer<AdminUiSessions, never, CounterStore> = Layer.effect(
    AdminUiSessions,
    Effect.gen(function* () {
      const store = yield* CounterStore
      const prefixed = CounterStore.of({
        setIfAbsent: (key, value, ttl) => store.setIfAbsent(adminSessionKeyPrefix + key, value, ttl),
        get: (key) => store.get(adminSessionKeyPrefix + key),
        delete: (key) => store.delete(adminSessionKeyPrefix + key),
        ping: () => store.ping()
      })
      // Fresh: the process's memoised BrowserSessions (over the unprefixed store) must not be reused.
      const built = yield* Layer.build(
        Layer.fresh(BrowserSessions.layerNoDeps).pipe(Layer.provide(Layer.succeed(CounterStore, prefixed)))
      )
      return Context.get(built, BrowserSessions)
    })
  )
}

const noStore = { "Cache-Control": "no-store" }

const unauthorized = (error: string, code: string) => new Unauthorized({ error, code })
const sessionRequired = unauthorized("a bearer token or an admin UI session is required", "session_required")
const xsrfInvalid = new Forbidden({ error: "the X-XSRF-TOKEN header is missing or wrong", code: "xsrf_token_invalid" })

const errorJson = (error: Unauthorized | Forbidden | ServiceUnavailable) =>
  HttpServerResponse.setHeaders(
    errorResponse(
      error._tag === "Unauthorized" ? 401 : error._tag === "Forbidden" ? 403 : 503,
      error.error,
      error.code
    ),
    noStore
  )

/** The admin session of `request` (cookie, and the XSRF header on writes). */
const requireAdminSession = Effect.fnUntraced(function* (
  request: HttpServerRequest.HttpServerRequest,
  sessions: BrowserSessions["Service"]
) {
  const sessionId = request.cookies[adminSessionCookieName]
  if (sessionId === undefined || sessionId === "") return yield* sessionRequired
  const found = yield* sessions.get(sessionId)
  if (Option.isNone(found)) return yield* sessionRequired
  if (
    !xsrfExemptMethods.has(request.method.toUpperCase()) &&
    !xsrfTokenMatches(found.value, request.headers[xsrfHeaderName])
  ) {
    return yield* xsrfInvalid
  }
  return { sessionId, session: found.value }
})

/** The actor of an admin session, re-read from the directory (a deleted or replaced actor is a 401). */
/** The actor of an admin UI session (see `sessionActor`), service `admin-api`. */
const adminSessionActor = (session: BrowserSession, directory: ActorDirectory["Service"]) =>
  sessionActor(session, "admin-api").pipe(Effect.provideService(ActorDirectory, directory))

/**
 * `Authentication` of the admin-api: a bearer token exactly as before; without one, an admin UI
 * session cookie (XSRF header required on every method but GET, HEAD and OPTIONS).
 */
export const AdminUiAuthenticationLive: Layer.Layer<
  Authentication,
  never,
  Authenticator | AdminUiSessions | ActorDirectory
> = Layer.effect(
  Authentication,
  Effect.gen(function* () {
    const authenticator = yield* Authenticator
    const sessions = yield* AdminUiSessions
    const directory = yield* ActorDirectory
    return bearerOrSession(authenticator, "admin-api", (request) =>
      request.cookies[adminSessionCookieName] === undefined
        ? unauthorized("a bearer token is required", "unauthorized")
        : Effect.flatMap(requireAdminSession(request, sessions), ({ session }) => adminSessionActor(session, directory))
    )
  })
)

const queryOf = (url: string): URLSearchParams => {
  const at = url.indexOf("?")
  return new URLSearchParams(at === -1 ? "" : url.slice(at + 1))
}

/** The admin UI page, assets and session routes; mount on the admin-api's router only. */
export const AdminUiRoutes: Layer.Layer<
  never,
  never,
  HttpRouter.HttpRouter | Authenticator | AdminUiSessions | ActorDirectory | SvcConfig
> = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const config = yield* SvcConfig
    const authenticator = yield* Authenticator
    const sessions = yield* AdminUiSessions
    const directory = yield* ActorDirectory
    const bundle = loadBundle("admin")
    const sessionTtlMs = config.publicService.sessionTtlMs
    const initiateUrl = config.file.admin_api?.ui?.initiate_session_url
    const notFound = errorResponse(404, "not found", "not_found")

    const cookies = (sessionId: string, xsrfToken: string, maxAgeSeconds: number) => [
      serializeCookie(adminSessionCookieName, sessionId, {
        httpOnly: true,
        secure: true,
        sameSite: "Strict",
        maxAgeSeconds
      }),
      serializeCookie(adminXsrfCookieName, xsrfToken, {
        httpOnly: false,
        secure: true,
        sameSite: "Strict",
        maxAgeSeconds
      })
    ]
    const cleared = [
      serializeCookie(adminSessionCookieName, "", {
        httpOnly: true,
        secure: true,
        sameSite: "Strict",
        maxAgeSeconds: 0
      }),
      serializeCookie(adminXsrfCookieName, "", { httpOnly: false, secure: true, sameSite: "Strict", maxAgeSeconds: 0 })
    ]

    /** A session for a verified token, living at most as long as the token. */
    const startSession = Effect.fnUntraced(function* (
      request: HttpServerRequest.HttpServerRequest,
      actor: AuthenticatedActor
    ) {
      const now = yield* Clock.currentTimeMillis
      const ttlMs = Math.min(sessionTtlMs, actor.expiresAt === undefined ? sessionTtlMs : actor.expiresAt * 1000 - now)
      if (ttlMs < 1000) return yield* unauthorized("the token expires too soon", "token_expired")
      const previous = request.cookies[adminSessionCookieName]
      if (previous !== undefined) yield* Effect.ignore(sessions.revoke(previous))
      const created = yield* sessions.create({
        actorId: actor.id,
        externalId: actor.externalId,
        restrictions: actor.restrictions,
        ttlMs
      })
      return cookies(created.sessionId, created.xsrfToken, Math.floor(ttlMs / 1000))
    })

    yield* router.add("GET", `${adminUiPath}login`, (request) =>
      Effect.gen(function* () {
        const token = queryOf(request.url).get("token") ?? ""
        if (token === "") {
          if (initiateUrl !== undefined && URL.canParse(initiateUrl)) {
            const url = new URL(initiateUrl)
            url.searchParams.set("return_to", adminUiPath)
            return redirectTo(url.href, { status: 302 })
          }
          return redirectTo(adminUiPath, { status: 303 })
        }
        const actor = yield* authenticator.authenticate(token, "admin-api")
        const problem = loginTokenProblem(token, Math.floor((yield* Clock.currentTimeMillis) / 1000))
        if (problem !== undefined) return yield* unauthorized("this sign-in link is not accepted", problem)
        return withSetCookies(redirectTo(adminUiPath, { status: 303 }), yield* startSession(request, actor))
      }).pipe(
        Effect.catchTags({
          Unauthorized: (e) =>
            Effect.as(
              Effect.logInfo("admin UI login refused").pipe(Effect.annotateLogs({ code: e.code })),
              redirectTo(`${adminUiPath}?login_error=${encodeURIComponent(e.code)}`, { status: 303 })
            ),
          ServiceUnavailable: (e) => Effect.succeed(errorJson(e))
        })
      )
    )

    yield* router.add("POST", `${adminUiPath}session`, (request) =>
      Effect.gen(function* () {
        if (!(request.headers["content-type"] ?? "").toLowerCase().startsWith("application/json")) {
          return errorResponse(415, "the body must be application/json", "unsupported_media_type")
        }
        const body = yield* request.json.pipe(Effect.orElseSucceed(() => undefined))
        const token =
          typeof body === "object" && body !== null && "token" in body && typeof body.token === "string"
            ? body.token.trim()
            : ""
        if (token === "") {
          return errorResponse(400, "token is required", "invalid_request", [
            { field: "body.token", message: "a non-empty string is required" }
          ])
        }
        const actor = yield* authenticator.authenticate(token, "admin-api")
        return withSetCookies(
          HttpServerResponse.empty({ status: 204, headers: noStore }),
          yield* startSession(request, actor)
        )
      }).pipe(
        Effect.catchTags({
          Unauthorized: (e) => Effect.succeed(errorJson(e)),
          ServiceUnavailable: (e) => Effect.succeed(errorJson(e))
        })
      )
    )

    yield* router.add("GET", `${adminUiPath}session`, (request) =>
      Effect.gen(function* () {
        const { session } = yield* requireAdminSession(request, sessions)
        const actor = yield* adminSessionActor(session, directory)
        return HttpServerResponse.jsonUnsafe(
          {
            actorId: actor.id,
            externalId: actor.externalId,
            name: actor.name,
            expiresAt: DateTime.formatIso(DateTime.makeUnsafe(session.expiresAt)),
            initiateSessionUrl: initiateUrl ?? null
          },
          { headers: noStore }
        )
      }).pipe(
        Effect.catchTags({
          Unauthorized: (e) => Effect.succeed(errorJson(e)),
          Forbidden: (e) => Effect.succeed(errorJson(e)),
          ServiceUnavailable: (e) => Effect.succeed(errorJson(e))
        })
      )
    )

    yield* router.add("POST", `${adminUiPath}logout`, (request) =>
      requireAdminSession(request, sessions).pipe(
        Effect.flatMap(({ sessionId }) => sessions.revoke(sessionId)),
        Effect.as(withSetCookies(HttpServerResponse.empty({ status: 204, headers: noStore }), cleared)),
        Effect.catchTags({
          Unauthorized: (e) => Effect.succeed(errorJson(e)),
          Forbidden: (e) => Effect.succeed(errorJson(e)),
          ServiceUnavailable: (e) => Effect.succeed(errorJson(e))
        })
      )
    )

    // `/ui/*` also matches `/ui` itself (the page).
    yield* router.add("GET", `${adminUiPath}*`, (request) => {
      const relative = pathBelow(request.url, adminUiPath) ?? ""
      if (relative === "" || relative === "index.html") return Effect.succeed(indexResponse(bundle, []))
      return Effect.succeed(assetResponse(bundle, relative) ?? notFound)
    })
  })
)
