import SwaggerParser from "@apidevtools/swagger-parser"
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { OpenApi } from "effect/http-api"
import type { OpenAPIV2 } from "openapi-types"
import { type Swagger2Document, toSwagger2 } from "./Swagger2.ts"
import { convertSchema, type Json } from "./Swagger2Schema.ts"
import { renderDocument } from "./SwaggerFiles.ts"
import { FixtureApi } from "./testing/FixtureApi.ts"

const validate = (doc: unknown) =>
  Effect.tryPromise({
    try: () => SwaggerParser.validate(structuredClone(doc) as OpenAPIV2.Document),
    catch: (error) => (error instanceof Error ? error.message : String(error))
  })

const convert = (schema: unknown, definitions: Record<string, unknown> = {}) =>
  convertSchema(schema, { hoisted: {}, definitions })

const doc: Swagger2Document = toSwagger2(OpenApi.fromApi(FixtureApi))

const at = (value: Json | undefined, ...keys: ReadonlyArray<string | number>): Json | undefined => {
  let current: Json | undefined = value
  for (const key of keys) {
    if (current === null || typeof current !== "object") return undefined
    current = Array.isArray(current) ? current[key as number] : (current as { [k: string]: Json })[key as string]
  }
  return current
}

describe("toSwagger2 on the fixture HttpApi", () => {
  it("produces the Swagger 2.0 frame, paths and operation ids", () => {
    assert.deepStrictEqual(Object.keys(doc), ["swagger", "info", "paths", "definitions", "securityDefinitions", "tags"])
    assert.strictEqual(doc.swagger, "2.0")
    assert.deepStrictEqual(doc.info, { title: "Fixture API", version: "1.2.3" })
    assert.deepStrictEqual(Object.keys(doc.paths), [
      "/api/v1/widgets",
      "/api/v1/widgets/{id}",
      "/api/v1/widgets/{id}/_rename",
      "/api/v1/widgets/{id}/parts/{partId}",
      "/ping"
    ])
    assert.strictEqual(at(doc.paths, "/api/v1/widgets", "get", "operationId"), "widgets.list")
    assert.strictEqual(at(doc.paths, "/api/v1/widgets", "get", "summary"), "List widgets")
    assert.strictEqual(at(doc.paths, "/api/v1/widgets", "post", "description"), "Creates a widget.")
    assert.deepStrictEqual(at(doc.paths, "/api/v1/widgets/{id}", "delete", "tags"), ["Widgets"])
    assert.deepStrictEqual(at(doc.tags, 0), { name: "Widgets" })
    assert.notInclude(JSON.stringify(doc), "#/components/")
  })

  it("inlines path, query and header parameters with primitive types", () => {
    assert.deepStrictEqual(at(doc.paths, "/api/v1/widgets/{id}/parts/{partId}", "get", "parameters"), [
      { name: "id", in: "path", description: "A widget id (wdg_…)", required: true, type: "string" },
      { name: "partId", in: "path", required: true, type: "string" }
    ])
    assert.deepStrictEqual(at(doc.paths, "/api/v1/widgets", "get", "parameters"), [
      { name: "x-request-id", in: "header", required: false, type: "string" },
      { name: "limit", in: "query", required: false, type: "string" },
      { name: "kind", in: "query", required: false, type: "string", enum: ["small", "large"] }
    ])
  })

  it("turns the JSON payload into a body parameter and keeps every response", () => {
    const create = at(doc.paths, "/api/v1/widgets", "post")
    assert.deepStrictEqual(at(create, "consumes"), ["application/json"])
    assert.deepStrictEqual(at(create, "produces"), ["application/json"])
    assert.deepStrictEqual(at(create, "parameters"), [
      { name: "body", in: "body", required: true, schema: { $ref: "#/definitions/CreateWidget" } }
    ])
    assert.deepStrictEqual(at(create, "responses"), {
      "201": { description: "Widget", schema: { $ref: "#/definitions/Widget" } },
      "401": { description: "Unauthorized", schema: { $ref: "#/definitions/UnauthorizedEncoded" } },
      "409": { description: "NameConflict", schema: { $ref: "#/definitions/NameConflictEncoded" } },
      "422": { description: "<No Content>" }
    })
    const rename = at(doc.paths, "/api/v1/widgets/{id}/_rename", "post")
    assert.deepStrictEqual(at(rename, "consumes"), ["application/x-www-form-urlencoded"])
    assert.deepStrictEqual(at(rename, "parameters"), [
      { name: "id", in: "path", description: "A widget id (wdg_…)", required: true, type: "string" },
      { name: "name", in: "formData", required: true, type: "string" },
      { name: "reason", in: "formData", required: false, type: "string" }
    ])
    assert.deepStrictEqual(at(doc.paths, "/api/v1/widgets", "get", "responses", "200", "headers"), {
      "x-total-count": { type: "string" }
    })
    const part = at(doc.paths, "/api/v1/widgets/{id}/parts/{partId}", "get")
    assert.deepStrictEqual(at(part, "produces"), ["text/csv", "application/json"])
    assert.deepStrictEqual(at(part, "responses", "200"), { description: "Success", schema: { type: "string" } })
    assert.deepStrictEqual(at(part, "responses", "404", "description"), "No such widget")
    assert.deepStrictEqual(at(doc.paths, "/api/v1/widgets/{id}", "delete", "responses", "204"), {
      description: "<No Content>"
    })
  })

  it("maps bearer security to an Authorization header apiKey", () => {
    assert.deepStrictEqual(doc.securityDefinitions, {
      bearer: { type: "apiKey", in: "header", name: "Authorization", description: "Bearer <jwt>" }
    })
    assert.deepStrictEqual(at(doc.paths, "/api/v1/widgets/{id}", "get", "security"), [{ bearer: [] }])
    assert.strictEqual(at(doc.paths, "/ping", "get", "security"), undefined)
  })

  it("converts definitions: optional, nullable, literal unions, bounds, tuples and tagged unions", () => {
    assert.deepStrictEqual(doc.definitions.CreateWidget, {
      type: "object",
      required: ["name"],
      properties: {
        name: { type: "string" },
        kind: { type: "string", enum: ["small", "large"] },
        note: { type: "string", "x-nullable": true }
      },
      additionalProperties: false
    })
    const widget = at(doc.definitions, "Widget", "properties")
    assert.deepStrictEqual(at(widget, "id"), { $ref: "#/definitions/WidgetId" })
    assert.deepStrictEqual(at(widget, "name"), { type: "string", example: "gear" })
    assert.deepStrictEqual(at(widget, "version"), { type: "number", enum: [1] })
    assert.deepStrictEqual(at(widget, "weight"), { type: "number", minimum: 0, exclusiveMinimum: true })
    assert.deepStrictEqual(at(widget, "note"), { type: "string", "x-nullable": true })
    assert.deepStrictEqual(at(widget, "dimensions", "items"), { type: "number" })
    assert.deepStrictEqual(at(widget, "shape", "type"), "object")
    assert.deepStrictEqual(at(widget, "shape", "x-anyOf", 1, "properties", "_tag"), {
      type: "string",
      enum: ["square"]
    })
    assert.notInclude(at(doc.definitions, "Widget", "required") as ReadonlyArray<Json>, "color")
  })

  it.effect("validates as Swagger 2.0, and the validator rejects OpenAPI 3.1 constructs", () =>
    Effect.gen(function* () {
      yield* validate(doc)
      yield* validate(toSwagger2(OpenApi.fromApi(FixtureApi), { host: "localhost:8081", schemes: ["https"] }))
      const raw = {
        ...doc,
        definitions: { ...doc.definitions, Bad: { anyOf: [{ type: "string" }, { type: "null" }] } }
      }
      const error = yield* Effect.flip(validate(raw))
      assert.include(error, "Swagger schema validation failed")
      assert.include(error, "#/definitions/Bad")
    })
  )

  it("is deterministic and honours host, basePath, schemes and title", () => {
    assert.strictEqual(renderDocument(toSwagger2(OpenApi.fromApi(FixtureApi))), renderDocument(doc))
    const widgetsOnly = OpenApi.fromApi(FixtureApi)
    delete widgetsOnly.paths["/ping"]
    const based = toSwagger2(widgetsOnly, { host: "h:1", basePath: "/api/v1", schemes: ["https"], title: "T" })
    assert.deepStrictEqual(Object.keys(based).slice(0, 5), ["swagger", "info", "host", "basePath", "schemes"])
    assert.deepStrictEqual(
      [based.host, based.basePath, based.schemes, based.info.title],
      ["h:1", "/api/v1", ["https"], "T"]
    )
    assert.deepStrictEqual(Object.keys(based.paths), [
      "/widgets",
      "/widgets/{id}",
      "/widgets/{id}/_rename",
      "/widgets/{id}/parts/{partId}"
    ])
    assert.throws(() => toSwagger2(OpenApi.fromApi(FixtureApi), { basePath: "/api/v1" }), /\/ping is outside basePath/)
  })
})

describe("convertSchema (JSON Schema 2020-12 constructs Swagger 2.0 lacks)", () => {
  it("nullability", () => {
    assert.deepStrictEqual(convert({ type: ["integer", "null"] }), { type: "integer", "x-nullable": true })
    assert.deepStrictEqual(convert({ anyOf: [{ $ref: "#/components/schemas/A" }, { type: "null" }] }), {
      allOf: [{ $ref: "#/definitions/A" }],
      "x-nullable": true
    })
    assert.deepStrictEqual(convert({ type: "string", enum: ["a", null] }), {
      type: "string",
      enum: ["a"],
      "x-nullable": true
    })
    assert.deepStrictEqual(convert({ type: "string", nullable: true }), { type: "string", "x-nullable": true })
  })

  it("const, examples, exclusive bounds and unknown keywords", () => {
    assert.deepStrictEqual(convert({ type: "string", const: "v" }), { type: "string", enum: ["v"] })
    assert.deepStrictEqual(convert({ type: "string", examples: ["a", "b"] }), { type: "string", example: "a" })
    assert.deepStrictEqual(convert({ type: "number", exclusiveMaximum: 5 }), {
      type: "number",
      maximum: 5,
      exclusiveMaximum: true
    })
    assert.deepStrictEqual(convert({ type: "number", minimum: 3, exclusiveMinimum: 1 }), { type: "number", minimum: 3 })
    assert.deepStrictEqual(convert({ type: "string", contentEncoding: "base64", $comment: "c" }), {
      type: "string",
      "x-comment": "c",
      "x-contentEncoding": "base64"
    })
  })

  it("anyOf / oneOf", () => {
    const nonFinite = { type: "string", enum: ["Infinity", "-Infinity", "NaN"] }
    assert.deepStrictEqual(convert({ anyOf: [{ type: "number" }, nonFinite] }), { type: "number" })
    assert.deepStrictEqual(
      convert({
        anyOf: [
          { type: "string", enum: ["a"] },
          { type: "string", enum: ["b", "a"] }
        ]
      }),
      {
        type: "string",
        enum: ["a", "b"]
      }
    )
    assert.deepStrictEqual(convert({ oneOf: [{ type: "string" }, { type: "number" }], description: "d" }), {
      description: "d",
      "x-oneOf": [{ type: "string" }, { type: "number" }]
    })
    assert.deepStrictEqual(
      convert({ anyOf: [{ $ref: "#/components/schemas/A" }, { type: "object" }] }, { A: { type: "object" } }),
      { type: "object", "x-anyOf": [{ $ref: "#/definitions/A" }, { type: "object" }] }
    )
  })

  it("prefixItems and $defs", () => {
    assert.deepStrictEqual(convert({ type: "array", prefixItems: [{ type: "string" }, { const: 1 }], items: false }), {
      type: "array",
      items: { "x-anyOf": [{ type: "string" }, { enum: [1] }] },
      "x-prefixItems": [{ type: "string" }, { enum: [1] }]
    })
    const ctx = { hoisted: {}, definitions: {} }
    const converted = convertSchema({ $defs: { N: { type: "string", const: "n" } }, $ref: "#/$defs/N" }, ctx)
    assert.deepStrictEqual(converted, { $ref: "#/definitions/N" })
    assert.deepStrictEqual(ctx.hoisted, { N: { type: "string", enum: ["n"] } })
  })
})
