import { assert, describe, it } from "@effect/vitest"
import { Exit, Schema } from "effect"
import { definitionParseOptions } from "./ConnectorDefinition.ts"
import { issueDetails } from "./Errors.ts"
import { configurationKeys, secretConfigurationKeys, SetupFlow, setupSteps } from "./SetupFlow.ts"

const decode = (input: unknown) => Schema.decodeUnknownExit(SetupFlow)(input, definitionParseOptions)

const problems = (input: unknown) => {
  const exit = decode(input)
  if (Exit.isSuccess(exit)) return []
  const reason = exit.cause.reasons[0]
  return reason?._tag === "Fail" ? issueDetails(reason.error.issue) : []
}

const step = (id: string, properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  id,
  json_schema: { type: "object", properties, ...extra }
})

const flow = {
  preconnect: { steps: [step("a", { region: { type: "string" }, token: { type: "string", writeOnly: true } })] },
  configure: { steps: [step("b", { project: { type: "string" }, pw: { type: "string", format: "password" } })] }
}

describe("SetupFlow", () => {
  it("decodes to itself and lists steps, keys and secret keys", () => {
    assert.deepStrictEqual(decode(flow), Exit.succeed(flow))
    assert.deepStrictEqual(
      setupSteps(flow).map((located) => [located.phase, located.index, located.step.id]),
      [
        ["preconnect", 0, "a"],
        ["configure", 0, "b"]
      ]
    )
    assert.deepStrictEqual([...configurationKeys(flow)], ["region", "token", "project", "pw"])
    assert.deepStrictEqual([...secretConfigurationKeys(flow)], ["token", "pw"])
    assert.strictEqual(configurationKeys(undefined).size, 0)
  })

  it("requires an object form with declared keys and only the allowed top-level keywords", () => {
    assert.deepStrictEqual(
      problems({
        configure: {
          steps: [
            {
              id: "s",
              json_schema: { type: "string", properties: { "9lives": {} }, oneOf: [], additionalProperties: true }
            }
          ]
        }
      }),
      [
        { field: "configure.steps[0].json_schema.type", message: 'a step schema must have type: "object"' },
        {
          field: "configure.steps[0].json_schema.oneOf",
          message:
            "not allowed at the top of a step schema (allowed: $comment, $defs, type, title, description, properties, required, additionalProperties)"
        },
        {
          field: "configure.steps[0].json_schema.additionalProperties",
          message: "may only be false: configuration keys are exactly the declared properties"
        },
        {
          field: "configure.steps[0].json_schema.properties.9lives",
          message: "a configuration key is 1 to 63 letters, digits or '_', not starting with a digit"
        }
      ]
    )
    assert.deepStrictEqual(problems({ configure: { steps: [{ id: "s", json_schema: { type: "object" } }] } }), [
      {
        field: "configure.steps[0].json_schema.properties",
        message: "must be an object declaring the step's configuration keys"
      }
    ])
  })

  it("keeps step ids and configuration keys unique across both phases", () => {
    assert.deepStrictEqual(
      problems({
        preconnect: { steps: [step("same", { region: {} })] },
        configure: { steps: [step("same", { other: {} }), step("c", { region: {} })] }
      }),
      [
        { field: "configure.steps[0].id", message: "repeats the id of preconnect.steps[0]" },
        {
          field: "configure.steps[1].json_schema.properties.region",
          message: "configuration key already declared by preconnect.steps[0]"
        }
      ]
    )
  })

  it("rejects empty phases, bad ids and oversized schemas", () => {
    assert.deepStrictEqual(problems({ preconnect: { steps: [] } }), [
      { field: "preconnect.steps", message: "must have at least one step; omit the phase instead" }
    ])
    assert.deepStrictEqual(
      problems({ preconnect: { steps: [step("Bad Id", {})] } }).map((p) => p.field),
      ["preconnect.steps[0].id"]
    )
    const big = step("big", { a: { type: "string", description: "x".repeat(70 * 1024) } })
    assert.deepStrictEqual(problems({ preconnect: { steps: [big] } }), [
      { field: "preconnect.steps[0].json_schema", message: "must be at most 65536 bytes of JSON" }
    ])
  })
})
