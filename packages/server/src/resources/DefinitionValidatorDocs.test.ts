/** Every YAML example of docs/connector-definitions.md is a valid definition document. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { readFileSync } from "node:fs"
import { parse } from "yaml"
import { DefinitionValidator } from "./DefinitionValidator.ts"

const docPath = new URL("../../../../docs/connector-definitions.md", import.meta.url)
const yamlBlocks = Array.from(
  readFileSync(docPath, "utf8").matchAll(/```yaml\n([\s\S]*?)```/g),
  (match) => match[1] ?? ""
)

describe("docs/connector-definitions.md examples", () => {
  it("has an example for every auth method", () => {
    const methods = yamlBlocks.map((block) => {
      const type = /^ {2}type: (\S+)$/m.exec(block)?.[1]
      const variant = /^ {2}(?:placement|grant_type): (\S+)$/m.exec(block)?.[1]
      return variant === undefined ? type : `${type}/${variant}`
    })
    for (const method of [
      "none",
      "api_key/bearer",
      "api_key/header",
      "api_key/query",
      "basic",
      "oauth2/authorization_code",
      "oauth2/client_credentials"
    ]) {
      assert.include(methods, method)
    }
  })

  it.effect("every YAML block validates, and its decoded form validates to itself", () =>
    Effect.gen(function* () {
      const validator = yield* DefinitionValidator
      assert.isAtLeast(yamlBlocks.length, 8)
      for (const [index, block] of yamlBlocks.entries()) {
        const exit = yield* Effect.exit(validator.validate(block))
        assert.isTrue(Exit.isSuccess(exit), `example ${index + 1}: ${JSON.stringify(exit)}`)
        if (Exit.isSuccess(exit)) {
          assert.deepStrictEqual(yield* validator.validate(exit.value), exit.value)
        }
      }
    }).pipe(Effect.provide(DefinitionValidator.layer))
  )

  it.effect("the stored form shown is the first example with its defaults filled in", () =>
    Effect.gen(function* () {
      const validator = yield* DefinitionValidator
      const first = yield* validator.validate(yamlBlocks[0])
      assert.deepStrictEqual(first, parse(yamlBlocks.at(-1) ?? ""))
    }).pipe(Effect.provide(DefinitionValidator.layer))
  )
})
