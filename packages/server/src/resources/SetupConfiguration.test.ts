import { assert, describe, it } from "@effect/vitest"
import type { SetupFlow } from "@svc/domain/SetupFlow"
import { Effect } from "effect"
import { redactConfiguration, secretKeys, setupFlowProblems, validateConfiguration } from "./SetupConfiguration.ts"

const setup_flow: SetupFlow = {
  preconnect: {
    steps: [
      {
        id: "account",
        json_schema: {
          type: "object",
          properties: {
            region: { type: "string", enum: ["eu", "us"], default: "us" },
            subdomain: { type: "string", pattern: "^[a-z]+$" },
            api_secret: { type: "string", writeOnly: true }
          },
          required: ["region", "subdomain"]
        }
      }
    ]
  },
  configure: {
    steps: [
      {
        id: "project",
        json_schema: {
          type: "object",
          properties: {
            project: { type: "string" },
            limits: { type: "object", properties: { max: { type: "integer", default: 10 } }, required: ["max"] }
          },
          required: ["project"]
        }
      },
      {
        id: "webhook",
        json_schema: {
          type: "object",
          properties: {
            webhook_url: { type: "string", format: "uri" },
            webhook_password: { type: "string", format: "password" }
          },
          required: ["webhook_url"]
        }
      }
    ]
  }
}
const definition = { setup_flow }

const failure = (configuration: Record<string, unknown> | undefined, root?: string) =>
  Effect.flip(validateConfiguration(definition, configuration, root))

describe("validateConfiguration", () => {
  it.effect("applies defaults and reports complete setup", () =>
    Effect.gen(function* () {
      const result = yield* validateConfiguration(definition, {
        subdomain: "acme",
        project: "p1",
        limits: {},
        webhook_url: "https://hooks.example.com/x"
      })
      assert.deepStrictEqual(result, {
        configuration: {
          subdomain: "acme",
          region: "us",
          project: "p1",
          limits: { max: 10 },
          webhook_url: "https://hooks.example.com/x"
        },
        setupStepId: null
      })
    })
  )

  it.effect("does not modify the caller's object", () =>
    Effect.gen(function* () {
      const input = { subdomain: "acme", limits: {} }
      yield* validateConfiguration(definition, input)
      assert.deepStrictEqual(input, { subdomain: "acme", limits: {} })
    })
  )

  it.effect("a missing required configure property names the first such step", () =>
    Effect.gen(function* () {
      const missingBoth = yield* validateConfiguration(definition, { subdomain: "acme" })
      assert.strictEqual(missingBoth.setupStepId, "project")
      const missingWebhook = yield* validateConfiguration(definition, { subdomain: "acme", project: "p" })
      assert.strictEqual(missingWebhook.setupStepId, "webhook")
    })
  )

  it.effect("a missing required preconnect property is a 400", () =>
    Effect.gen(function* () {
      const error = yield* failure(undefined)
      assert.strictEqual(error.code, "invalid_configuration")
      assert.deepStrictEqual(error.details, [{ field: "body.configuration.subdomain", message: "is required" }])
    })
  )

  it.effect("names wrong types, formats, nested problems and undeclared keys without echoing values", () =>
    Effect.gen(function* () {
      const error = yield* failure({
        subdomain: "NOT-LOWER",
        region: "mars",
        api_secret: 12345,
        limits: { max: "many" },
        webhook_url: "not a url",
        colour: "hunter2"
      })
      assert.deepStrictEqual(
        error.details?.map((detail) => detail.field),
        [
          "body.configuration.colour",
          "body.configuration.region",
          "body.configuration.subdomain",
          "body.configuration.api_secret",
          "body.configuration.limits.max",
          "body.configuration.webhook_url"
        ]
      )
      assert.strictEqual(error.details?.[0]?.message, "no setup step declares this key")
      const text = JSON.stringify(error)
      for (const value of ["NOT-LOWER", "mars", "12345", "many", "not a url", "hunter2"]) {
        assert.notInclude(text, value)
      }
    })
  )

  it.effect("reports a missing nested required property as an error at its path", () =>
    Effect.gen(function* () {
      const flow: SetupFlow = {
        configure: {
          steps: [
            {
              id: "nested",
              json_schema: {
                type: "object",
                properties: { inner: { type: "object", properties: { a: { type: "string" } }, required: ["a"] } }
              }
            }
          ]
        }
      }
      const error = yield* Effect.flip(validateConfiguration({ setup_flow: flow }, { inner: {} }, "configuration"))
      assert.deepStrictEqual(error.details, [{ field: "configuration.inner.a", message: "is required" }])
    })
  )

  it.effect("rejects a non-object configuration; a definition without a flow accepts only {}", () =>
    Effect.gen(function* () {
      const notObject = yield* Effect.flip(
        validateConfiguration(definition, ["x"] as unknown as Record<string, unknown>)
      )
      assert.deepStrictEqual(notObject.details, [{ field: "body.configuration", message: "must be an object" }])
      assert.deepStrictEqual(yield* validateConfiguration({}, undefined), { configuration: {}, setupStepId: null })
      const extra = yield* Effect.flip(validateConfiguration({}, { a: 1 }))
      assert.deepStrictEqual(extra.details, [
        { field: "body.configuration.a", message: "no setup step declares this key" }
      ])
    })
  )
})

describe("setupFlowProblems", () => {
  it("accepts a valid flow and names each step whose schema does not compile", () => {
    assert.deepStrictEqual(setupFlowProblems(setup_flow, "body.definition"), [])
    const broken: SetupFlow = {
      configure: {
        steps: [
          { id: "ok", json_schema: { type: "object", properties: { a: { type: "string" } } } },
          { id: "bad", json_schema: { type: "object", properties: { b: { type: "strung" } } } }
        ]
      }
    }
    const problems = setupFlowProblems(broken, "body.definition")
    assert.deepStrictEqual(
      problems.map((problem) => problem.field),
      ["body.definition.setup_flow.configure.steps[1].json_schema"]
    )
    assert.match(problems[0]?.message ?? "", /^invalid JSON Schema: /)
  })
})

describe("secret keys and redaction", () => {
  it("treats writeOnly and format: password properties as secret", () => {
    assert.deepStrictEqual([...secretKeys(definition)].sort(), ["api_secret", "webhook_password"])
    assert.strictEqual(secretKeys({}).size, 0)
  })

  it("replaces only secret values present in the configuration", () => {
    assert.deepStrictEqual(redactConfiguration(definition, { region: "eu", api_secret: "s3cret", project: "p" }), {
      region: "eu",
      api_secret: "[redacted]",
      project: "p"
    })
  })
})

describe("keys that reach the prototype (SECURITY.md)", () => {
  it.effect("a configuration key __proto__, constructor or prototype is refused, never merged", () =>
    Effect.gen(function* () {
      const definition = { setup_flow }
      for (const key of ["__proto__", "constructor", "prototype"]) {
        const input = JSON.parse(`{"subdomain":"acme","project":"p","${key}":{"region":"eu"}}`) as Record<
          string,
          unknown
        >
        const error = yield* Effect.flip(validateConfiguration(definition, input))
        assert.deepStrictEqual(
          error.details?.filter((detail) => detail.field === `body.configuration.${key}`),
          [
            {
              field: `body.configuration.${key}`,
              message: "__proto__, constructor and prototype are not allowed as keys"
            }
          ]
        )
      }
    })
  )

  it("a setup step may not declare such a property", () => {
    const flow: SetupFlow = {
      configure: {
        steps: [{ id: "s", json_schema: { type: "object", properties: { constructor: { type: "string" } } } }]
      }
    }
    assert.deepStrictEqual(setupFlowProblems(flow, "body.definition"), [
      {
        field: "body.definition.setup_flow.configure.steps[0].json_schema.properties.constructor",
        message: "__proto__, constructor and prototype are not allowed as keys"
      }
    ])
  })
})
