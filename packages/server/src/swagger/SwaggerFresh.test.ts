import SwaggerParser from "@apidevtools/swagger-parser"
import { assert, describe, it } from "@effect/vitest"
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import { Effect } from "effect"
import { readFile } from "node:fs/promises"
import { join } from "node:path"
import type { OpenAPIV2 } from "openapi-types"
import { swaggerDirectory, swaggerDocuments } from "./generate.ts"
import type { Swagger2Document } from "./Swagger2.ts"
import { documentFileName, missingEndpoints, staleDocuments } from "./SwaggerFiles.ts"

const committed = (name: "api" | "admin-api") =>
  Effect.promise(
    async (): Promise<Swagger2Document> =>
      JSON.parse(await readFile(join(swaggerDirectory, documentFileName(name)), "utf8").catch(() => '{"paths":{}}'))
  )

// spec 9.2: the committed Swagger 2.0 documents are regenerated from the HttpApi declarations.
describe("committed Swagger 2.0 documents (docs/swagger)", () => {
  it.effect("equal a fresh generation from ApiV1 / AdminApiV1", () =>
    Effect.gen(function* () {
      const stale = yield* Effect.promise(() => staleDocuments(swaggerDocuments(), swaggerDirectory))
      assert.strictEqual(stale.join("\n"), "", `Stale Swagger documents:\n${stale.join("\n")}`)
    })
  )

  it.effect("document every endpoint of every group with its method and path", () =>
    Effect.gen(function* () {
      const api = yield* committed("api")
      const admin = yield* committed("admin-api")
      assert.deepStrictEqual(
        missingEndpoints(ApiV1, api),
        [],
        "api.swagger.json lacks endpoints; run `npm run swagger`"
      )
      assert.deepStrictEqual(
        missingEndpoints(AdminApiV1, admin),
        [],
        "admin-api.swagger.json lacks endpoints; run `npm run swagger`"
      )
    })
  )

  it.effect("validate as Swagger 2.0", () =>
    Effect.gen(function* () {
      for (const doc of Object.values(swaggerDocuments())) {
        yield* Effect.promise(() => SwaggerParser.validate(structuredClone(doc) as OpenAPIV2.Document))
      }
    })
  )
})
