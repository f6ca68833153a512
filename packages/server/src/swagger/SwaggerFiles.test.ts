import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  documentFileName,
  missingEndpoints,
  renderDocument,
  staleDocuments,
  swaggerDocument,
  swaggerPath,
  writeDocuments
} from "./SwaggerFiles.ts"
import * as SwaggerRoute from "./SwaggerRoute.ts"
import { FixtureApi } from "./testing/FixtureApi.ts"

const tempDir = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "svc-swagger-"))),
  (dir) => Effect.promise(() => rm(dir, { recursive: true, force: true }))
)

describe("SwaggerFiles", () => {
  it.effect("writes pretty JSON with a trailing newline and reports stale or missing files by name", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const dir = yield* tempDir
        const docs = { fixture: swaggerDocument(FixtureApi), other: { swagger: "2.0" } }
        const file = join(dir, documentFileName("fixture"))
        assert.deepStrictEqual(yield* Effect.promise(() => staleDocuments(docs, dir)), [
          `${file} is missing; run \`npm run swagger\``,
          `${join(dir, "other.swagger.json")} is missing; run \`npm run swagger\``
        ])
        assert.deepStrictEqual(yield* Effect.promise(() => writeDocuments(docs, dir)), [
          file,
          join(dir, "other.swagger.json")
        ])
        const written = yield* Effect.promise(() => readFile(file, "utf8"))
        assert.strictEqual(written, `${JSON.stringify(docs.fixture, null, 2)}\n`)
        assert.deepStrictEqual(yield* Effect.promise(() => staleDocuments(docs, dir)), [])
        yield* Effect.promise(() => writeFile(file, written.replace("Fixture API", "Old title")))
        assert.deepStrictEqual(yield* Effect.promise(() => staleDocuments(docs, dir)), [
          `${file} is stale; run \`npm run swagger\``
        ])
      })
    )
  )

  it("finds every endpoint of an HttpApi in its document, and names the ones missing", () => {
    const doc = swaggerDocument(FixtureApi)
    assert.deepStrictEqual(missingEndpoints(FixtureApi, doc), [])
    const { "/api/v1/widgets/{id}": _removed, ...rest } = doc.paths
    assert.deepStrictEqual(missingEndpoints(FixtureApi, { ...doc, paths: rest }), [
      "GET /api/v1/widgets/{id}",
      "DELETE /api/v1/widgets/{id}"
    ])
    const based = swaggerDocument(FixtureApi, { basePath: "/" })
    assert.deepStrictEqual(missingEndpoints(FixtureApi, based), [])
  })

  it("swaggerPath uses {name} path parameters", () => {
    assert.strictEqual(swaggerPath("/api/v1/connections/:id/_disconnect"), "/api/v1/connections/{id}/_disconnect")
    assert.strictEqual(swaggerPath("/a/:id/b/:other"), "/a/{id}/b/{other}")
    assert.strictEqual(swaggerPath("/plain"), "/plain")
  })

  it.effect("SwaggerRoute serves the document at /swagger.json", () =>
    Effect.gen(function* () {
      const doc = swaggerDocument(FixtureApi)
      const { handler, dispose } = HttpRouter.toWebHandler(
        SwaggerRoute.layer(doc).pipe(Layer.provide(HttpServer.layerServices)),
        { disableLogger: true }
      )
      yield* Effect.addFinalizer(() => Effect.promise(dispose))
      const response = yield* Effect.promise(() => handler(new Request("http://localhost/swagger.json")))
      assert.strictEqual(response.status, 200)
      assert.include(response.headers.get("content-type") ?? "", "application/json")
      const body = yield* Effect.promise(() => response.text())
      assert.strictEqual(body, renderDocument(doc))
      assert.strictEqual(JSON.parse(body).swagger, "2.0")
    }).pipe(Effect.scoped)
  )
})
