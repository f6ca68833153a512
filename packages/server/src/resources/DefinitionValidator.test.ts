import { assert, describe, it } from "@effect/vitest"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import type { BadRequest } from "@svc/domain/Errors"
import { Effect, Exit } from "effect"
import { DefinitionValidator } from "./DefinitionValidator.ts"

const minimal = { type: "demo", auth: { type: "none" } }

const decodedMinimal: ConnectorDefinition = {
  type: "demo",
  auth: { type: "none" },
  proxy: {
    allowed_hosts: [],
    allow_private_networks: false,
    timeouts: { connect: "5s", first_byte: "30s", total: "60s" },
    max_concurrent_requests: 16
  },
  rate_limiting: {
    disabled: false,
    retry_after_headers: ["Retry-After"],
    max_retry_after: "15m",
    default_retry_after: "60s"
  }
}

const validate = (input: unknown, root?: string) =>
  Effect.flatMap(DefinitionValidator, (validator) => validator.validate(input, root))

const rejection = (input: unknown, root?: string) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(validate(input, root))
    if (Exit.isSuccess(exit)) return assert.fail(`expected a rejection of ${JSON.stringify(input)}`)
    const error = exit.cause.reasons[0]
    assert.strictEqual(error?._tag, "Fail")
    const failure = (error as { readonly error: BadRequest }).error
    assert.strictEqual(failure.code, "invalid_definition")
    return failure.details ?? []
  })

const fieldsOf = (input: unknown, root?: string) =>
  Effect.map(rejection(input, root), (details) => details.map((detail) => detail.field))

const hooks = (up: string) => ({ ...minimal, migrations: { up: { javascript: up } } })

describe("DefinitionValidator", () => {
  it.layer(DefinitionValidator.layer)((it) => {
    it.effect("materialises defaults; the decoded form decodes to itself", () =>
      Effect.gen(function* () {
        const decoded = yield* validate(minimal)
        assert.deepStrictEqual(decoded, decodedMinimal)
        assert.deepStrictEqual(yield* validate(decoded), decoded)
      })
    )

    it.effect("accepts YAML and JSON text", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* validate("type: demo\nauth:\n  type: none\n"), decodedMinimal)
        assert.deepStrictEqual(yield* validate(JSON.stringify(minimal)), decodedMinimal)
      })
    )

    it.effect("reports YAML syntax errors with line and column, and duplicate keys", () =>
      Effect.gen(function* () {
        const [syntax] = yield* rejection("type: demo\nauth: [none\n")
        assert.strictEqual(syntax?.field, "body.definition")
        assert.match(syntax?.message ?? "", /^not valid YAML or JSON: .*\(line \d+, column \d+\)$/)
        const [duplicate] = yield* rejection("type: demo\ntype: other\nauth:\n  type: none\n")
        assert.match(duplicate?.message ?? "", /unique/i)
        assert.match(duplicate?.message ?? "", /line 2, column 1/)
        const [multiple] = yield* rejection("type: demo\n---\ntype: other\n")
        assert.match(multiple?.message ?? "", /^not valid YAML or JSON/)
      })
    )

    it.effect("rejects empty text, non-objects, non-finite numbers and deep nesting", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* fieldsOf(""), ["body.definition"])
        assert.deepStrictEqual(yield* fieldsOf([minimal]), ["body.definition"])
        assert.deepStrictEqual(yield* fieldsOf("type: demo\nauth: {type: none}\nprobes: [.inf]\n"), [
          "body.definition.probes[0]"
        ])
        let deep: unknown = {}
        for (let i = 0; i < 80; i++) deep = { nested: deep }
        const [nesting] = yield* rejection({ ...minimal, display_name: deep })
        assert.strictEqual(nesting?.message, "nested deeper than 64 levels")
      })
    )

    it.effect("caps the document at 1 MB", () =>
      Effect.gen(function* () {
        const big = `type: demo\nauth: {type: none}\ndescription: "${"x".repeat(1024 * 1024)}"\n`
        const [text] = yield* rejection(big)
        assert.deepStrictEqual(text, { field: "body.definition", message: "must be at most 1 MB" })
        const [object] = yield* rejection({ ...minimal, javascript: "1;".repeat(600 * 1024) })
        assert.strictEqual(object?.message, "must be at most 1 MB")
      })
    )

    it.effect("names the missing field of the chosen auth variant", () =>
      Effect.gen(function* () {
        const auth = (value: unknown) => fieldsOf({ type: "demo", auth: value })
        assert.deepStrictEqual(yield* auth({ type: "api_key", placement: "header" }), [
          "body.definition.auth.header_name"
        ])
        assert.deepStrictEqual(yield* auth({ type: "api_key", placement: "query" }), [
          "body.definition.auth.query_param"
        ])
        assert.deepStrictEqual(yield* auth({ type: "api_key" }), ["body.definition.auth.placement"])
        assert.deepStrictEqual(yield* auth({ type: "oauth2" }), ["body.definition.auth.grant_type"])
        assert.deepStrictEqual(yield* auth({ type: "oauth2", grant_type: "client_credentials" }), [
          "body.definition.auth.token_endpoint"
        ])
        assert.deepStrictEqual(yield* auth({ type: "apikey" }), ["body.definition.auth.type"])
        assert.deepStrictEqual(yield* auth("none"), ["body.definition.auth"])
        assert.deepStrictEqual(yield* fieldsOf({ type: "demo" }), ["body.definition.auth"])
      })
    )

    it.effect("rejects unknown keys anywhere, naming them", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* fieldsOf({ ...minimal, proxy: { alowed_hosts: [] } }), [
          "body.definition.proxy.alowed_hosts"
        ])
        assert.deepStrictEqual(yield* fieldsOf({ ...minimal, displayName: "x" }), ["body.definition.displayName"])
        assert.deepStrictEqual(yield* fieldsOf({ type: "demo", auth: { type: "basic", realm: "x" } }), [
          "body.definition.auth.realm"
        ])
        assert.deepStrictEqual(yield* fieldsOf({ ...minimal, rate_limiting: { exponential_backoff: { factor: 2 } } }), [
          "body.definition.rate_limiting.exponential_backoff.factor"
        ])
      })
    )

    it.effect("uses the given root in every field", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* fieldsOf({ ...minimal, logo_url: "http://x.example/a.png" }, "definition"), [
          "definition.logo_url"
        ])
      })
    )

    it.effect("compiles step schemas with Ajv and names the failing step", () =>
      Effect.gen(function* () {
        const step = (id: string, properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
          id,
          json_schema: { type: "object", properties, ...extra }
        })
        const flow = {
          ...minimal,
          setup_flow: {
            preconnect: { steps: [step("a", { region: { type: "string", default: "us" } })] },
            configure: {
              steps: [
                step("b", { name: { type: "string" } }),
                step("c", { size: { type: "integer", minimun: 1 } }),
                step("d", { id: { type: "string" } }, { required: ["other"] })
              ]
            }
          }
        }
        const details = yield* rejection(flow)
        assert.deepStrictEqual(
          details.map((detail) => detail.field),
          [
            "body.definition.setup_flow.configure.steps[1].json_schema",
            "body.definition.setup_flow.configure.steps[2].json_schema"
          ]
        )
        assert.match(details[0]?.message ?? "", /^invalid JSON Schema: .*unknown keyword: "minimun"/)
        assert.match(details[1]?.message ?? "", /required property "other" is not defined/)
        const [format] = yield* rejection({
          ...minimal,
          setup_flow: { configure: { steps: [step("e", { url: { type: "string", format: "url-ish" } })] } }
        })
        assert.match(format?.message ?? "", /unknown format "url-ish"/)
      })
    )

    it.effect("rejects hook syntax errors at the hook's path", () =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* fieldsOf(hooks("migrate(cfg")), ["body.definition.migrations.up.javascript"])
        const [statement] = yield* rejection(hooks("let x = 1"))
        assert.match(statement?.message ?? "", /^SyntaxError: .*\(line 1, column \d+\)$/)
        assert.deepStrictEqual(
          yield* fieldsOf({ ...minimal, javascript: "function f( {", migrations: { down: { javascript: "a; b" } } }),
          ["body.definition.javascript", "body.definition.migrations.down.javascript"]
        )
      })
    )

    it.effect("never executes hooks: code that would throw or loop forever still validates", () =>
      Effect.gen(function* () {
        const definition = yield* validate({
          ...minimal,
          javascript: "while (true) {}\nthrow new Error('ran')",
          migrations: { up: { javascript: "(() => { for (;;) {} })()" }, down: { javascript: "undefinedFn(cfg)" } }
        })
        assert.strictEqual(definition.migrations?.up?.javascript, "(() => { for (;;) {} })()")
      })
    )

    it.effect("checks probes against the setup flow and allowed hosts", () =>
      Effect.gen(function* () {
        const details = yield* rejection({
          ...minimal,
          proxy: { allowed_hosts: ["api.example.com"] },
          setup_flow: {
            preconnect: {
              steps: [{ id: "s", json_schema: { type: "object", properties: { region: { type: "string" } } } }]
            }
          },
          probes: [
            { id: "a", url: "https://api.example.com/{{cfg.region}}/{{cfg.missing}}" },
            { id: "a", url: "https://other.example.com/" },
            { id: "b", url: "https://{{cfg.region}}.anywhere.example/" }
          ]
        })
        assert.deepStrictEqual(details, [
          {
            field: "body.definition.probes[0].url",
            message: "{{cfg.missing}} names a key no setup_flow step declares"
          },
          { field: "body.definition.probes[1].id", message: "must not repeat a probe id" },
          { field: "body.definition.probes[1].url", message: "other.example.com is not allowed by proxy.allowed_hosts" }
        ])
      })
    )
  })
})
