import { assert, describe, it } from "@effect/vitest"
import { ByteSize, Cause, Effect, Exit, Layer, Schema } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServer } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { AdminApiV1, ApiV1, PublicApi, WorkerApi } from "@svc/domain/http/Apis"
import { IntFromString, jsonProblem, maxJsonDepth, optionalBody } from "@svc/domain/StrictInput"
import * as fc from "fast-check"
import { hostileText, wtf8PercentEncode } from "@svc/domain/testing/HostileInput"
import { layerErrorHandling } from "./ErrorHandling.ts"
import { layerInputGuard, urlProblem } from "./InputGuard.ts"

const nest = (depth: number): unknown => {
  let value: unknown = 1
  for (let i = 0; i < depth; i++) value = [value]
  return value
}

/** A decoding result that is a success or a typed SchemaError, never a defect. */
const assertTyped = (exit: Exit.Exit<unknown, unknown>, what: string) => {
  if (Exit.isSuccess(exit)) return
  assert.isTrue(
    exit.cause.reasons.every((r) => r._tag === "Fail" && Schema.isSchemaError(r.error)),
    `${what}: ${Cause.pretty(exit.cause)}`
  )
}

const fieldsOf = (schema: Schema.Top | undefined): ReadonlyArray<string> =>
  schema !== undefined && "fields" in schema && typeof schema.fields === "object" && schema.fields !== null
    ? Object.keys(schema.fields)
    : []

const endpoints = [ApiV1, AdminApiV1, PublicApi, WorkerApi].flatMap((api) =>
  Object.values(api.groups).flatMap((group) => Object.values(group.endpoints))
)

describe("InputGuard over every route's decoders", () => {
  it("params and query: the URL check refuses hostile text, else decoding is typed and leaves only storable text", () => {
    fc.assert(
      fc.property(hostileText, (text) => {
        const refused = urlProblem(`/api/v1/x/${wtf8PercentEncode(text)}?q=${wtf8PercentEncode(text)}`) !== undefined
        assert.strictEqual(refused, jsonProblem(text) !== undefined, JSON.stringify(text))
        for (const endpoint of endpoints) {
          for (const [slot, schema] of [
            ["params", endpoint.params],
            ["query", endpoint.query === undefined ? undefined : Schema.toCodecArrayFromSingle(endpoint.query)]
          ] as const) {
            if (schema === undefined) continue
            const input = Object.fromEntries(fieldsOf(slot === "query" ? endpoint.query : schema).map((k) => [k, text]))
            const exit = Schema.decodeUnknownExit(schema as Schema.Codec<unknown, unknown>)(input)
            assertTyped(exit, `${endpoint.method} ${endpoint.path} ${slot}`)
            if (!refused && Exit.isSuccess(exit)) assert.strictEqual(jsonProblem(exit.value), undefined)
          }
        }
      }),
      { numRuns: 60 }
    )
  })

  it("payloads: the body check refuses hostile JSON, else decoding is typed (never a defect)", () => {
    const payloads = endpoints.flatMap((endpoint) =>
      [...endpoint.payload.values()].map(({ schemas }: { readonly schemas: ReadonlyArray<Schema.Top> }) => ({
        endpoint,
        decode: Schema.decodeUnknownExit(Schema.Union(schemas) as unknown as Schema.Codec<unknown, unknown>),
        fields: schemas.flatMap(fieldsOf)
      }))
    )
    assert.isAbove(payloads.length, 20)
    fc.assert(
      fc.property(hostileText, fc.integer({ min: 0, max: 3 * maxJsonDepth }), (text, depth) => {
        for (const { endpoint, decode, fields } of payloads) {
          const shapes: ReadonlyArray<unknown> = [
            text,
            { [text]: text },
            Object.fromEntries(fields.map((k) => [k, text])),
            Object.fromEntries(fields.map((k) => [k, { [text]: nest(depth) }])),
            nest(depth)
          ]
          for (const shape of shapes) {
            if (jsonProblem(shape) !== undefined) continue // answered 400 before decoding
            assertTyped(decode(shape), `${endpoint.method} ${endpoint.path}`)
          }
        }
      }),
      { numRuns: 40 }
    )
  })
})

class Things extends HttpApiGroup.make("things").add(
  HttpApiEndpoint.post("create", "/things/:id", {
    params: { id: Schema.String },
    query: { limit: Schema.optionalKey(IntFromString) },
    payload: Schema.Struct({ name: Schema.String, extra: Schema.optionalKey(Schema.Json) }),
    success: Schema.Struct({ name: Schema.String })
  }),
  HttpApiEndpoint.post("act", "/things/:id/_act", {
    params: { id: Schema.String },
    payload: optionalBody(Schema.Struct({ timeoutSeconds: Schema.optionalKey(Schema.Int) })),
    success: Schema.Struct({ timeoutSeconds: Schema.optionalKey(Schema.Int) })
  })
) {}
class TestApi extends HttpApi.make("test").add(Things) {}

const handlers = HttpApiBuilder.group(TestApi, "things", (h) =>
  h
    .handle("create", ({ payload }) => Effect.succeed({ name: payload.name }))
    .handle("act", ({ payload }) => Effect.succeed(payload))
)

const app = Layer.mergeAll(
  HttpApiBuilder.layer(TestApi).pipe(Layer.provide(handlers)),
  layerInputGuard,
  layerErrorHandling()
).pipe(
  Layer.provide(Layer.succeed(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(1024 * 1024))),
  Layer.provide(HttpServer.layerServices)
)

const call = (path: string, init?: RequestInit) =>
  Effect.acquireUseRelease(
    Effect.sync(() => HttpRouter.toWebHandler(app, { disableLogger: true })),
    ({ handler }) =>
      Effect.promise(async () => {
        const response = await handler(new Request(`http://localhost${path}`, init))
        const text = await response.text()
        return {
          status: response.status,
          type: response.headers.get("content-type"),
          body: text === "" ? undefined : (JSON.parse(text) as unknown)
        }
      }),
    ({ dispose }) => Effect.promise(dispose)
  )

const post = (path: string, body: string, contentType = "application/json") =>
  call(path, { method: "POST", body, headers: { "content-type": contentType } })

describe("InputGuard over HTTP", () => {
  it.effect("NUL or bad percent-encoding in the path or query is 400 naming it", () =>
    Effect.gen(function* () {
      const ok = JSON.stringify({ name: "x" })
      assert.deepStrictEqual((yield* post("/things/a%00b", ok)).body, {
        error: "invalid request",
        code: "invalid_request",
        details: [{ field: "path", message: "must not contain NUL (\\u0000)" }]
      })
      assert.deepStrictEqual((yield* post("/things/a%ED%A0%80", ok)).status, 400)
      assert.deepStrictEqual((yield* post("/things/a?limit=1%00", ok)).body, {
        error: "invalid request",
        code: "invalid_request",
        details: [{ field: "query.limit", message: "must not contain NUL (\\u0000)" }]
      })
      for (const limit of ["1e3", "0x10", "%201", "01"]) {
        const res = yield* post(`/things/a?limit=${limit}`, ok)
        assert.strictEqual(res.status, 400, limit)
      }
      assert.strictEqual((yield* post("/things/a?limit=10", ok)).status, 200)
    })
  )

  it.effect("NUL, lone surrogates and deep nesting in a JSON body are 400 naming the field", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual((yield* post("/things/a", '{"name":"x\\u0000"}')).body, {
        error: "invalid request body",
        code: "invalid_request",
        details: [{ field: "body.name", message: "must not contain NUL (\\u0000)" }]
      })
      assert.deepStrictEqual((yield* post("/things/a", '{"name":"x","extra":{"a":["\\ud800"]}}')).body, {
        error: "invalid request body",
        code: "invalid_request",
        details: [{ field: "body.extra.a[0]", message: "must be valid Unicode (no lone surrogates)" }]
      })
      const deep = yield* post("/things/a", `{"name":"x","extra":${"[".repeat(100_000)}${"]".repeat(100_000)}}`)
      assert.strictEqual(deep.status, 400)
      const within = yield* post("/things/a", JSON.stringify({ name: "x", extra: nest(maxJsonDepth - 1) }))
      assert.strictEqual(within.status, 200)
    })
  )

  it.effect("an unsupported content type answers the standard body; an empty body on an action is {}", () =>
    Effect.gen(function* () {
      const res = yield* post("/things/a", "name=x", "text/plain")
      assert.deepStrictEqual(res, {
        status: 415,
        type: "application/json",
        body: { error: "unsupported content type: send application/json", code: "unsupported_media_type" }
      })
      assert.deepStrictEqual((yield* call("/things/a/_act", { method: "POST" })).body, {})
      assert.deepStrictEqual((yield* post("/things/a/_act", "")).body, {})
      assert.deepStrictEqual((yield* post("/things/a/_act", '{"timeoutSeconds":5}')).body, { timeoutSeconds: 5 })
      assert.strictEqual((yield* post("/things/a/_act", '{"timeoutSeconds":"x"}')).status, 400)
    })
  )
})
