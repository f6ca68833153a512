import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import type { Permission, ServiceId } from "@svc/domain/Auth"
import { Unauthorized } from "@svc/domain/Errors"
import { Authentication, CurrentActor, RequiredPermission } from "@svc/domain/http/Security"
import { Authenticator } from "../auth/Authenticator.ts"
import { CurrentService } from "./CurrentService.ts"
import { AuthenticationLive } from "./AuthenticationLive.ts"
import { layerErrorHandling } from "./ErrorHandling.ts"

class Guarded extends HttpApiGroup.make("guarded")
  .add(
    HttpApiEndpoint.get("listConnectors", "/connectors", { success: Schema.String }).annotate(RequiredPermission, {
      resource: "connectors",
      verb: "list"
    }),
    HttpApiEndpoint.get("me", "/me", { success: Schema.String })
  )
  .middleware(Authentication) {}
class TestApi extends HttpApi.make("test").add(Guarded) {}

const actors: Record<string, { permissions: ReadonlyArray<Permission>; restrictions?: ReadonlyArray<Permission> }> = {
  "token-admin": { permissions: [{ namespace: "root.**", resources: ["*"], verbs: ["*"] }] },
  "token-other": { permissions: [{ namespace: "root.**", resources: ["actors"], verbs: ["list"] }] },
  "token-restricted": {
    permissions: [{ namespace: "root.**", resources: ["*"], verbs: ["*"] }],
    restrictions: [{ namespace: "root.**", resources: ["actors"], verbs: ["get"] }]
  }
}

const authenticate = (token: string, service: ServiceId) => {
  const actor = actors[token]
  if (actor === undefined) return Effect.fail(new Unauthorized({ error: "bad token", code: "invalid_token" }))
  return Effect.succeed({
    id: "act_test",
    externalId: token,
    namespace: "root",
    name: token,
    labels: {},
    annotations: {},
    permissions: actor.permissions,
    restrictions: actor.restrictions,
    service,
    expiresAt: undefined
  })
}

const FakeAuthenticator = Layer.succeed(Authenticator)({ authenticate, authenticateAgent: authenticate })

const handlers = HttpApiBuilder.group(TestApi, "guarded", (h) =>
  h
    .handle("listConnectors", () => Effect.succeed("listed"))
    .handle("me", () => Effect.map(CurrentActor, (a) => `${a.externalId}@${a.service}`))
)

const app = Layer.mergeAll(
  HttpApiBuilder.layer(TestApi).pipe(Layer.provide(handlers), Layer.provide(AuthenticationLive)),
  layerErrorHandling()
).pipe(
  Layer.provide(FakeAuthenticator),
  Layer.provide(Layer.succeed(CurrentService, "admin-api")),
  Layer.provide(HttpServer.layerServices)
)

const call = (path: string, token?: string) =>
  Effect.acquireUseRelease(
    Effect.sync(() => HttpRouter.toWebHandler(app, { disableLogger: true })),
    ({ handler }) =>
      Effect.promise(async () => {
        const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` }
        const response = await handler(new Request(`http://localhost${path}`, { headers }))
        return { status: response.status, body: (await response.json()) as unknown }
      }),
    ({ dispose }) => Effect.promise(dispose)
  )

describe("AuthenticationLive", () => {
  it.effect("no token → 401 with the standard body", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* call("/me"), {
        status: 401,
        body: { error: "a bearer token is required", code: "unauthorized" }
      })
    })
  )

  it.effect("an invalid token → the authenticator's 401", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* call("/me", "nope"), {
        status: 401,
        body: { error: "bad token", code: "invalid_token" }
      })
    })
  )

  it.effect("a valid token provides CurrentActor with the service it arrived on", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* call("/me", "token-other"), { status: 200, body: "token-other@admin-api" })
    })
  )

  it.effect("an endpoint's declared permission is enforced: 403 without any grant, 200 with one", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual(yield* call("/connectors", "token-admin"), { status: 200, body: "listed" })
      assert.deepStrictEqual(yield* call("/connectors", "token-other"), {
        status: 403,
        body: { error: "permission connectors:list is required", code: "forbidden" }
      })
    })
  )

  it.effect("token restrictions narrow the actor's grants (spec 5.5)", () =>
    Effect.gen(function* () {
      const res = yield* call("/connectors", "token-restricted")
      assert.strictEqual(res.status, 403)
    })
  )
})
