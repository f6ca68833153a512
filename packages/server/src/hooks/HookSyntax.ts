/**
 * Syntax checks of connector hooks (spec 2.10: validated when the definition is, never executed).
 * The shared `javascript` compiles as a global script; each migration hook must be one JavaScript
 * expression. Everything is compiled with QuickJS `compileOnly`, in a fresh runtime whose interrupt
 * handler stops anything that would run; the WebAssembly module loads once per layer and is
 * replaced if a compile ever fails in the host (e.g. nesting deep enough to exhaust the JS stack).
 */
import type { ErrorDetail } from "@svc/domain/Errors"
import { Context, Effect, Layer, Predicate } from "effect"
import type { QuickJSWASMModule } from "quickjs-emscripten"

/** The hook sources of a definition. */
export interface HookSources {
  readonly javascript?: string
  readonly migrations?: {
    readonly up?: { readonly javascript: string }
    readonly down?: { readonly javascript: string }
  }
}

/** How a migration hook expression is evaluated: parenthesised on lines of its own. */
export const expressionSource = (expression: string): string => `(\n${expression}\n)`

// A computed property name takes exactly one AssignmentExpression: this rejects top-level commas,
// and text that closes the wrapper early cannot compile both here and in `expressionSource`.
const singleExpressionSource = (expression: string): string => `({[\n${expression}\n]: 0})`

type Outcome =
  | { readonly _tag: "Ok" }
  | { readonly _tag: "SyntaxError"; readonly message: string }
  | { readonly _tag: "HostFailure" }

const memoryLimit = 64 * 1024 * 1024
const stackLimit = 256 * 1024

// Where QuickJS stopped, in the author's lines (the wrapper adds `lineOffset` lines before them).
const location = (stack: unknown, lineOffset: number, lineCount: number): string => {
  const match = typeof stack === "string" ? /:(\d+):(\d+)/.exec(stack) : null
  if (match === null) return ""
  const line = Number(match[1]) - lineOffset
  if (line < 1 || line > lineCount) return " (at the end of the code)"
  return ` (line ${line}, column ${match[2]})`
}

const compile = (module: QuickJSWASMModule, source: string, lineOffset: number, lineCount: number): Outcome => {
  const runtime = module.newRuntime()
  try {
    runtime.setMemoryLimit(memoryLimit)
    runtime.setMaxStackSize(stackLimit)
    // Defence in depth: compileOnly never runs code, and if anything did it would stop at once.
    runtime.setInterruptHandler(() => true)
    const context = runtime.newContext()
    try {
      const result = context.evalCode(source, "hook.js", { type: "global", compileOnly: true })
      if (result.error === undefined) {
        result.value.dispose()
        return { _tag: "Ok" }
      }
      const dumped: unknown = context.dump(result.error)
      result.error.dispose()
      const text = (key: string) => (Predicate.hasProperty(dumped, key) ? dumped[key] : undefined)
      const name = typeof text("name") === "string" ? text("name") : "SyntaxError"
      const message = typeof text("message") === "string" ? text("message") : "does not compile"
      return { _tag: "SyntaxError", message: `${name}: ${message}${location(text("stack"), lineOffset, lineCount)}` }
    } finally {
      context.dispose()
    }
  } catch {
    return { _tag: "HostFailure" }
  } finally {
    try {
      runtime.dispose()
    } catch {
      // The module is replaced after a host failure; nothing more to release here.
    }
  }
}

/** QuickJS (its package and WebAssembly) is loaded at the first hook checked, not at start-up. */
const loadModule = Effect.promise(() => import("quickjs-emscripten").then((quickjs) => quickjs.newQuickJSWASMModule()))

/** Compiles connector hooks without running them and reports syntax errors by field. */
export class HookSyntax extends Context.Service<
  HookSyntax,
  {
    /** The problem with `source` as a global script, or `undefined` when it compiles. */
    readonly scriptProblem: (source: string) => Effect.Effect<string | undefined>
    /** The problem with `source` as one JavaScript expression, or `undefined` when it is one. */
    readonly expressionProblem: (source: string) => Effect.Effect<string | undefined>
    /** Problems of every hook of a definition, with fields under `root` (e.g. `body.definition`). */
    readonly problems: (hooks: HookSources, root: string) => Effect.Effect<ReadonlyArray<ErrorDetail>>
  }
>()("@svc/server/HookSyntax") {
  static readonly layer: Layer.Layer<HookSyntax> = Layer.effect(
    HookSyntax,
    Effect.gen(function* () {
      let module: QuickJSWASMModule | undefined

      const run = Effect.fnUntraced(function* (code: string, wrap: (code: string) => string, lineOffset: number) {
        if (module === undefined) module = yield* loadModule
        const outcome = compile(module, wrap(code), lineOffset, code.split("\n").length)
        if (outcome._tag !== "HostFailure") return outcome
        module = yield* loadModule
        return outcome
      })

      const describe = (outcome: Outcome): string | undefined => {
        switch (outcome._tag) {
          case "Ok":
            return undefined
          case "SyntaxError":
            return outcome.message
          case "HostFailure":
            return "could not be compiled: nested too deeply"
        }
      }

      const scriptProblem = (source: string) =>
        Effect.map(
          run(source, (code) => code, 0),
          describe
        )

      const expressionProblem = Effect.fnUntraced(function* (source: string) {
        const asExpression = yield* run(source, expressionSource, 1)
        if (asExpression._tag !== "Ok") return describe(asExpression)
        const single = yield* run(source, singleExpressionSource, 1)
        return single._tag === "Ok"
          ? undefined
          : "must be a single JavaScript expression (for example a function call), not statements or a comma list"
      })

      const problems = Effect.fnUntraced(function* (hooks: HookSources, root: string) {
        const out: Array<ErrorDetail> = []
        if (hooks.javascript !== undefined) {
          const problem = yield* scriptProblem(hooks.javascript)
          if (problem !== undefined) out.push({ field: `${root}.javascript`, message: problem })
        }
        for (const direction of ["up", "down"] as const) {
          const hook = hooks.migrations?.[direction]
          if (hook === undefined) continue
          const problem = yield* expressionProblem(hook.javascript)
          if (problem !== undefined) out.push({ field: `${root}.migrations.${direction}.javascript`, message: problem })
        }
        return out
      })

      return HookSyntax.of({ scriptProblem, expressionProblem, problems })
    })
  )
}
