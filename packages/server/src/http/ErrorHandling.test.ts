import { assert, describe, it } from "@effect/vitest"
import { ByteSize, Effect, Layer, Schema } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServer } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Conflict } from "@svc/domain/Errors"
import { layerErrorHandling } from "./ErrorHandling.ts"

class Things extends HttpApiGroup.make("things").add(
  HttpApiEndpoint.post("create", "/things", {
    payload: Schema.Struct({ name: Schema.String, size: Schema.Int, secret: Schema.optionalKey(Schema.Finite) }),
    success: Schema.Struct({ name: Schema.String }),
    error: Conflict
  }),
  HttpApiEndpoint.get("list", "/things", {
    query: { limit: Schema.optionalKey(Schema.NumberFromString.check(Schema.isInt())) },
    success: Schema.Array(Schema.String)
  }),
  HttpApiEndpoint.get("boom", "/boom", { success: Schema.String })
) {}
class TestApi extends HttpApi.make("test")
  .add(Things)
  .annotate(HttpApi.PayloadParseOptions, { errors: "all", onExcessProperty: "error" })
  .annotate(HttpApi.QueryParseOptions, { errors: "all" }) {}

const handlers = HttpApiBuilder.group(TestApi, "things", (h) =>
  h
    .handle("create", ({ payload }) =>
      payload.name === "taken"
        ? Effect.fail(new Conflict({ error: "name already in use", code: "name_conflict" }))
        : Effect.succeed({ name: payload.name })
    )
    .handle("list", () => Effect.succeed(["a"]))
    .handle("boom", () => Effect.die(new Error("database password is hunter2")))
)

const app = Layer.mergeAll(HttpApiBuilder.layer(TestApi).pipe(Layer.provide(handlers)), layerErrorHandling()).pipe(
  Layer.provide(Layer.succeed(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(1024))),
  Layer.provide(HttpServer.layerServices)
)

const call = (path: string, init?: RequestInit) =>
  Effect.acquireUseRelease(
    Effect.sync(() => HttpRouter.toWebHandler(app, { disableLogger: true })),
    ({ handler }) =>
      Effect.promise(async () => {
        const response = await handler(new Request(`http://localhost${path}`, init))
        const text = await response.text()
        return { status: response.status, body: text === "" ? undefined : (JSON.parse(text) as unknown) }
      }),
    ({ dispose }) => Effect.promise(dispose)
  )

const post = (body: string) =>
  call("/things", { method: "POST", body, headers: { "content-type": "application/json" } })

describe("ErrorHandling", () => {
  it.effect("a valid request passes untouched", () =>
    Effect.gen(function* () {
      const res = yield* post(JSON.stringify({ name: "x", size: 1 }))
      assert.deepStrictEqual(res, { status: 200, body: { name: "x" } })
    })
  )

  it.effect("a domain error encodes to exactly {error, code}", () =>
    Effect.gen(function* () {
      const res = yield* post(JSON.stringify({ name: "taken", size: 1 }))
      assert.deepStrictEqual(res, { status: 409, body: { error: "name already in use", code: "name_conflict" } })
    })
  )

  it.effect("an undecodable body is a 400 naming each field, without echoing values", () =>
    Effect.gen(function* () {
      const res = yield* post(JSON.stringify({ size: "big", secret: "hunter2", extra: "hunter2" }))
      assert.strictEqual(res.status, 400)
      assert.deepStrictEqual(res.body, {
        error: "invalid request body",
        code: "invalid_request",
        details: [
          { field: "body.extra", message: "Unexpected key" },
          { field: "body.name", message: "Missing key" },
          { field: "body.size", message: "Invalid type" },
          { field: "body.secret", message: "Invalid type" }
        ]
      })
      assert.notInclude(JSON.stringify(res.body), "hunter2")
    })
  )

  it.effect("malformed JSON is a 400 with the standard body", () =>
    Effect.gen(function* () {
      const res = yield* post("{not json")
      assert.strictEqual(res.status, 400)
      assert.strictEqual((res.body as { code: string }).code, "invalid_request")
    })
  )

  it.effect("an undecodable query parameter is a 400 naming it", () =>
    Effect.gen(function* () {
      const res = yield* call("/things?limit=many")
      assert.strictEqual(res.status, 400)
      assert.deepStrictEqual((res.body as { details: unknown }).details, [
        { field: "query.limit", message: "Expected an integer" }
      ])
    })
  )

  it.effect("a body over the cap is a 413 with the standard body", () =>
    Effect.gen(function* () {
      const res = yield* post(JSON.stringify({ name: "x".repeat(4096), size: 1 }))
      assert.deepStrictEqual(res, { status: 413, body: { error: "request body too large", code: "payload_too_large" } })
    })
  )

  it.effect("an unknown route is a 404 with the standard body", () =>
    Effect.gen(function* () {
      const res = yield* call("/nowhere")
      assert.deepStrictEqual(res, { status: 404, body: { error: "not found", code: "not_found" } })
    })
  )

  it.effect("a defect is a bare 500 that never carries the cause", () =>
    Effect.gen(function* () {
      const res = yield* call("/boom")
      assert.deepStrictEqual(res, { status: 500, body: { error: "internal error", code: "internal_error" } })
    })
  )
})
