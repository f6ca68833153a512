/**
 * The `Authentication` middleware of the public service (spec 5.1; API-CONVENTIONS
 * "Authentication"): a bearer token when one is sent, else the `svc_session` browser-session
 * cookie, with the `X-XSRF-TOKEN` header required on every method but GET, HEAD and OPTIONS.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import type { ServiceId } from "@svc/domain/Auth"
import { Forbidden, type ServiceUnavailable, Unauthorized } from "@svc/domain/Errors"
import { type AuthenticatedActor, Authentication, CurrentActor } from "@svc/domain/http/Security"
import { ActorDirectory } from "../resources/ActorDirectory.ts"
import { Authenticator } from "../auth/Authenticator.ts"
import { type BrowserSession, BrowserSessions, xsrfTokenMatches } from "../auth/BrowserSessions.ts"
import { requirePermission } from "./AuthenticationLive.ts"
import { sessionCookieName, xsrfHeaderName } from "./BrowserPages.ts"

/** Methods that need no XSRF header (they must not change state). */
export const xsrfExemptMethods: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"])

const sessionRequired = new Unauthorized({
  error: "a browser session or a bearer token is required",
  code: "session_required"
})
const xsrfInvalid = new Forbidden({ error: "the X-XSRF-TOKEN header is missing or wrong", code: "xsrf_token_invalid" })
const unknownActor = new Unauthorized({ error: "the session names an unknown actor", code: "unknown_actor" })

/** A request's live browser session and the id it was found by (a secret: never log it). */
export interface RequestSession {
  readonly sessionId: string
  readonly session: BrowserSession
}

/**
 * The browser session of `request`: the `svc_session` cookie must name a live session (else 401
 * `session_required`), and unless the method is GET/HEAD/OPTIONS the `X-XSRF-TOKEN` header must
 * carry the session's XSRF token (else 403 `xsrf_token_invalid`).
 */
export const requireBrowserSession = Effect.fnUntraced(function* (
  request: HttpServerRequest.HttpServerRequest
): Effect.fn.Return<RequestSession, Unauthorized | Forbidden | ServiceUnavailable, BrowserSessions> {
  const sessionId = request.cookies[sessionCookieName]
  if (sessionId === undefined || sessionId === "") return yield* sessionRequired
  const found = yield* (yield* BrowserSessions).get(sessionId)
  if (Option.isNone(found)) return yield* sessionRequired
  if (
    !xsrfExemptMethods.has(request.method.toUpperCase()) &&
    !xsrfTokenMatches(found.value, request.headers[xsrfHeaderName])
  ) {
    return yield* xsrfInvalid
  }
  return { sessionId, session: found.value }
})

/**
 * The actor of a browser session, re-read from the directory (a deleted or replaced actor is a
 * 401 `unknown_actor`): the session's restrictions, its service (`public`, or `admin-api` for an
 * admin UI session), expiry in epoch seconds.
 */
export const sessionActor = Effect.fnUntraced(function* (
  session: BrowserSession,
  service: "public" | "admin-api" = "public"
): Effect.fn.Return<AuthenticatedActor, Unauthorized | ServiceUnavailable, ActorDirectory> {
  const found = yield* (yield* ActorDirectory).findByExternalId(session.externalId)
  if (Option.isNone(found) || found.value.id !== session.actorId) return yield* unknownActor
  return {
    ...found.value,
    restrictions: session.restrictions,
    service,
    expiresAt: Math.floor(session.expiresAt / 1000)
  }
})

/**
 * `Authentication` that verifies a sent bearer token for `service` exactly as on every service
 * (never falling back to the cookie) and otherwise authenticates the request with `fromSession`;
 * the endpoint's `RequiredPermission` is enforced either way.
 */
export const bearerOrSession = (
  authenticator: Authenticator["Service"],
  service: ServiceId,
  fromSession: (
    request: HttpServerRequest.HttpServerRequest
  ) => Effect.Effect<AuthenticatedActor, Unauthorized | Forbidden | ServiceUnavailable>
) =>
  Authentication.of({
    bearer: Effect.fnUntraced(function* (httpEffect, { credential, endpoint }) {
      const token = Redacted.value(credential)
      const actor =
        token !== ""
          ? yield* authenticator.authenticate(token, service)
          : yield* fromSession(yield* HttpServerRequest.HttpServerRequest)
      yield* requirePermission(actor, endpoint)
      return yield* Effect.provideService(httpEffect, CurrentActor, actor)
    })
  })

/**
 * `Authentication` for the public service's HttpApi: a sent bearer token is verified exactly as
 * on the other services (for `public`, never falling back to the cookie); otherwise the browser
 * session authenticates. The endpoint's `RequiredPermission` is enforced either way.
 */
export const PublicAuthenticationLive: Layer.Layer<
  Authentication,
  never,
  Authenticator | BrowserSessions | ActorDirectory
> = Layer.effect(
  Authentication,
  Effect.gen(function* () {
    const authenticator = yield* Authenticator
    const sessions = yield* BrowserSessions
    const directory = yield* ActorDirectory
    return bearerOrSession(authenticator, "public", (request) =>
      requireBrowserSession(request).pipe(
        Effect.flatMap(({ session }) => sessionActor(session)),
        Effect.provideService(BrowserSessions, sessions),
        Effect.provideService(ActorDirectory, directory)
      )
    )
  })
)
