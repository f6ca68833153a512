import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { expressionSource, HookSyntax } from "./HookSyntax.ts"

const notSingle = "must be a single JavaScript expression (for example a function call), not statements or a comma list"

describe("HookSyntax", () => {
  it("wraps an expression on lines of its own, so a trailing line comment stays harmless", () => {
    assert.strictEqual(expressionSource("f(cfg) // done"), "(\nf(cfg) // done\n)")
  })

  it.layer(HookSyntax.layer)((it) => {
    it.effect("accepts expressions: calls, literals, functions, multi-line code with comments", () =>
      Effect.gen(function* () {
        const hooks = yield* HookSyntax
        for (const source of [
          "migrate(cfg, labels, annotations)",
          "({ config: { set: { region: cfg.region ?? 'us' } } })",
          "{ labels: { set: { tier: 'gold' } } }",
          "(() => { const x = 1; return { config: { set: { x } } } })()",
          "// leading comment\nmigrate(\n  cfg\n) // trailing comment",
          "(a, b)",
          "cond ? f(cfg) : g(cfg)"
        ]) {
          assert.strictEqual(yield* hooks.expressionProblem(source), undefined, source)
        }
      })
    )

    it.effect("rejects statements, comma lists, empty code and text that escapes the wrapper", () =>
      Effect.gen(function* () {
        const hooks = yield* HookSyntax
        assert.match((yield* hooks.expressionProblem("let x = 1")) ?? "", /^SyntaxError: /)
        assert.match((yield* hooks.expressionProblem("   ")) ?? "", /^SyntaxError: /)
        assert.match((yield* hooks.expressionProblem("f(cfg);")) ?? "", /^SyntaxError: /)
        assert.strictEqual(yield* hooks.expressionProblem("a, b"), notSingle)
        assert.strictEqual(yield* hooks.expressionProblem("f(cfg)\n); (g(cfg)"), notSingle)
        assert.strictEqual(
          yield* hooks.expressionProblem("1]: 0}); ({[2"),
          "SyntaxError: expecting ')' (line 1, column 2)"
        )
      })
    )

    it.effect("locates the error in the author's lines", () =>
      Effect.gen(function* () {
        const hooks = yield* HookSyntax
        assert.strictEqual(
          yield* hooks.scriptProblem("function f() {\n  return 1 +\n}"),
          "SyntaxError: unexpected token in expression: '}' (line 3, column 1)"
        )
        assert.strictEqual(
          yield* hooks.expressionProblem("migrate(cfg))"),
          "SyntaxError: unexpected token in expression: ')' (at the end of the code)"
        )
      })
    )

    it.effect("compiles the shared script as a global script, never as a module", () =>
      Effect.gen(function* () {
        const hooks = yield* HookSyntax
        assert.strictEqual(yield* hooks.scriptProblem("function migrate(cfg) { return {} }\nconst k = 1;"), undefined)
        assert.match((yield* hooks.scriptProblem("import x from 'y'")) ?? "", /^SyntaxError: /)
        assert.match((yield* hooks.scriptProblem("export const a = 1")) ?? "", /^SyntaxError: /)
      })
    )

    it.effect("never runs code: infinite loops and throws compile fine", () =>
      Effect.gen(function* () {
        const hooks = yield* HookSyntax
        assert.strictEqual(yield* hooks.scriptProblem("while (true) {}"), undefined)
        assert.strictEqual(yield* hooks.scriptProblem("throw new Error('ran')"), undefined)
        assert.strictEqual(yield* hooks.expressionProblem("(() => { for (;;) {} })()"), undefined)
      })
    )

    it.effect("survives nesting deep enough to exhaust the stack, and keeps working", () =>
      Effect.gen(function* () {
        const hooks = yield* HookSyntax
        const deep = `${"(".repeat(50_000)}1${")".repeat(50_000)}`
        assert.isString(yield* hooks.expressionProblem(deep))
        assert.isString(yield* hooks.scriptProblem(`${"[".repeat(50_000)}`))
        assert.strictEqual(yield* hooks.expressionProblem("migrate(cfg)"), undefined)
        assert.match((yield* hooks.expressionProblem("migrate(cfg")) ?? "", /^SyntaxError: /)
      })
    )

    it.effect("reports every hook of a definition under the root", () =>
      Effect.gen(function* () {
        const hooks = yield* HookSyntax
        const details = yield* hooks.problems(
          {
            javascript: "function ok() {}",
            migrations: { up: { javascript: "migrate(" }, down: { javascript: "a; b" } }
          },
          "body.definition"
        )
        assert.deepStrictEqual(
          details.map((detail) => detail.field),
          ["body.definition.migrations.up.javascript", "body.definition.migrations.down.javascript"]
        )
        assert.deepStrictEqual(yield* hooks.problems({}, "body.definition"), [])
      })
    )
  })
})
