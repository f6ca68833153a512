import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Layer, Option, Schema } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { TestClock } from "effect/testing"
import type { ServiceId } from "@svc/domain/Auth"
import { Unauthorized } from "@svc/domain/Errors"
import { type ActorIdentity, Authentication, CurrentActor, RequiredPermission } from "@svc/domain/http/Security"
import { ActorDirectory } from "../resources/ActorDirectory.ts"
import { Authenticator } from "../auth/Authenticator.ts"
import { BrowserSessions, type CreatedBrowserSession } from "../auth/BrowserSessions.ts"
import { layerErrorHandling } from "./ErrorHandling.ts"
import { PublicAuthenticationLive } from "./PublicAuthentication.ts"

class Guarded extends HttpApiGroup.make("guarded")
  .add(
    HttpApiEndpoint.get("me", "/me", { success: Schema.String }),
    HttpApiEndpoint.post("change", "/change", { success: Schema.String }),
    HttpApiEndpoint.get("listConnectors", "/connectors", { success: Schema.String }).annotate(RequiredPermission, {
      resource: "connectors",
      verb: "list"
    })
  )
  .middleware(Authentication) {}
class TestApi extends HttpApi.make("test").add(Guarded) {}

const t0 = 1_750_000_000_000
const ttlMs = 10 * 60 * 1000
const admin: ActorIdentity = {
  id: "act_admin",
  externalId: "admin",
  namespace: "root",
  name: "admin",
  labels: {},
  annotations: {},
  permissions: [{ namespace: "root.**", resources: ["*"], verbs: ["*"] }]
}

const directory = new Map<string, ActorIdentity>()
const FakeDirectory = Layer.succeed(ActorDirectory)({
  findByExternalId: (externalId) => Effect.sync(() => Option.fromUndefinedOr(directory.get(externalId))),
  invalidate: () => Effect.void,
  onInvalidate: () => {}
})

const authenticate = (token: string, service: ServiceId) =>
  token === "good-token"
    ? Effect.succeed({ ...admin, restrictions: undefined, service, expiresAt: undefined })
    : Effect.fail(new Unauthorized({ error: "bad token", code: "invalid_token" }))

const FakeAuthenticator = Layer.succeed(Authenticator)({ authenticate, authenticateAgent: authenticate })

const handlers = HttpApiBuilder.group(TestApi, "guarded", (h) =>
  h
    .handle("me", () => Effect.map(CurrentActor, (a) => `${a.externalId}@${a.service}:${a.expiresAt ?? "-"}`))
    .handle("change", () => Effect.succeed("changed"))
    .handle("listConnectors", () => Effect.succeed("listed"))
)

const app = Layer.mergeAll(
  HttpApiBuilder.layer(TestApi).pipe(Layer.provide(handlers), Layer.provide(PublicAuthenticationLive)),
  layerErrorHandling()
).pipe(Layer.provide(HttpServer.layerServices))

const deps = Layer.mergeAll(BrowserSessions.layerMemory, FakeAuthenticator, FakeDirectory)

interface Call {
  readonly method?: "GET" | "POST"
  readonly bearer?: string
  readonly session?: CreatedBrowserSession
  readonly xsrf?: string
}

/** Runs one request through the app in the test fiber (its TestClock included). */
const call = (path: string, options: Call = {}) =>
  Effect.gen(function* () {
    const http = yield* HttpRouter.toHttpEffect(app)
    const headers: Record<string, string> = {}
    if (options.bearer !== undefined) headers.authorization = `Bearer ${options.bearer}`
    if (options.session !== undefined) headers.cookie = `other=1; svc_session=${options.session.sessionId}`
    if (options.xsrf !== undefined) headers["x-xsrf-token"] = options.xsrf
    const request = new Request(`http://127.0.0.1${path}`, { method: options.method ?? "GET", headers })
    const response = yield* http.pipe(
      Effect.provideService(HttpServerRequest.HttpServerRequest, HttpServerRequest.fromWeb(request))
    )
    const web = HttpServerResponse.toWeb(response)
    return { status: web.status, body: (yield* Effect.promise(() => web.json())) as unknown }
  }).pipe(Effect.scoped)

const newSession = (restrictions?: ReadonlyArray<{ namespace: string; resources: string[]; verbs: string[] }>) =>
  Effect.flatMap(BrowserSessions, (sessions) =>
    sessions.create({ actorId: admin.id, externalId: admin.externalId, restrictions, ttlMs })
  )

const setup = Effect.gen(function* () {
  yield* TestClock.setTime(t0)
  directory.clear()
  directory.set(admin.externalId, admin)
})

const sessionRequired = { error: "a browser session or a bearer token is required", code: "session_required" }
const xsrfInvalid = { error: "the X-XSRF-TOKEN header is missing or wrong", code: "xsrf_token_invalid" }

describe("PublicAuthenticationLive", () => {
  it.effect("a bearer token is verified for the public service", () =>
    Effect.gen(function* () {
      yield* setup
      assert.deepStrictEqual(yield* call("/me", { bearer: "good-token" }), { status: 200, body: "admin@public:-" })
      assert.deepStrictEqual(yield* call("/change", { method: "POST", bearer: "good-token" }), {
        status: 200,
        body: "changed"
      })
    }).pipe(Effect.provide(deps))
  )

  it.effect("a sent bearer token never falls back to the cookie", () =>
    Effect.gen(function* () {
      yield* setup
      const session = yield* newSession()
      assert.deepStrictEqual(yield* call("/me", { bearer: "bad", session }), {
        status: 401,
        body: { error: "bad token", code: "invalid_token" }
      })
    }).pipe(Effect.provide(deps))
  )

  it.effect("no credentials → 401 session_required", () =>
    Effect.gen(function* () {
      yield* setup
      assert.deepStrictEqual(yield* call("/me"), { status: 401, body: sessionRequired })
    }).pipe(Effect.provide(deps))
  )

  it.effect("the session cookie authenticates a GET without an XSRF header", () =>
    Effect.gen(function* () {
      yield* setup
      const session = yield* newSession()
      assert.deepStrictEqual(yield* call("/me", { session }), {
        status: 200,
        body: `admin@public:${(t0 + ttlMs) / 1000}`
      })
    }).pipe(Effect.provide(deps))
  )

  it.effect("a POST needs the session's XSRF token: missing 403, wrong 403, right 200", () =>
    Effect.gen(function* () {
      yield* setup
      const session = yield* newSession()
      const other = yield* newSession()
      assert.deepStrictEqual(yield* call("/change", { method: "POST", session }), { status: 403, body: xsrfInvalid })
      assert.deepStrictEqual(yield* call("/change", { method: "POST", session, xsrf: other.xsrfToken }), {
        status: 403,
        body: xsrfInvalid
      })
      assert.deepStrictEqual(yield* call("/change", { method: "POST", session, xsrf: session.sessionId }), {
        status: 403,
        body: xsrfInvalid
      })
      assert.deepStrictEqual(yield* call("/change", { method: "POST", session, xsrf: session.xsrfToken }), {
        status: 200,
        body: "changed"
      })
    }).pipe(Effect.provide(deps))
  )

  it.effect("an expired, revoked or unknown session → 401 session_required", () =>
    Effect.gen(function* () {
      yield* setup
      const expiring = yield* newSession()
      const revoked = yield* newSession()
      yield* Effect.flatMap(BrowserSessions, (s) => s.revoke(revoked.sessionId))
      assert.deepStrictEqual(yield* call("/me", { session: revoked }), { status: 401, body: sessionRequired })
      const unknown = { ...expiring, sessionId: "x".repeat(43) }
      assert.deepStrictEqual(yield* call("/me", { session: unknown }), { status: 401, body: sessionRequired })
      yield* TestClock.adjust(Duration.millis(ttlMs - 1))
      assert.strictEqual((yield* call("/me", { session: expiring })).status, 200)
      yield* TestClock.adjust(Duration.millis(1))
      assert.deepStrictEqual(yield* call("/me", { session: expiring }), { status: 401, body: sessionRequired })
    }).pipe(Effect.provide(deps))
  )

  it.effect("a deleted or replaced actor → 401 unknown_actor", () =>
    Effect.gen(function* () {
      yield* setup
      const session = yield* newSession()
      directory.set(admin.externalId, { ...admin, id: "act_new" })
      const unknownActor = { status: 401, body: { error: "the session names an unknown actor", code: "unknown_actor" } }
      assert.deepStrictEqual(yield* call("/me", { session }), unknownActor)
      directory.delete(admin.externalId)
      assert.deepStrictEqual(yield* call("/me", { session }), unknownActor)
    }).pipe(Effect.provide(deps))
  )

  it.effect("the session's restrictions narrow the endpoint permission check", () =>
    Effect.gen(function* () {
      yield* setup
      const full = yield* newSession()
      const restricted = yield* newSession([{ namespace: "root.**", resources: ["connections"], verbs: ["get"] }])
      assert.deepStrictEqual(yield* call("/connectors", { session: full }), { status: 200, body: "listed" })
      assert.deepStrictEqual(yield* call("/connectors", { session: restricted }), {
        status: 403,
        body: { error: "permission connectors:list is required", code: "forbidden" }
      })
    }).pipe(Effect.provide(deps))
  )
})
