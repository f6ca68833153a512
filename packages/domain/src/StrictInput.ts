/**
 * What every client input must be before anything reads or stores it (issue 13, SECURITY.md
 * "Limits on every input"): text PostgreSQL can hold (no NUL) that is valid Unicode (no lone
 * surrogates), JSON nested at most {@link maxJsonDepth} levels, and integers written plainly.
 * Pure; the HTTP layer applies {@link jsonProblem} to every JSON body and {@link textProblem} to
 * every path segment and query parameter.
 */
import { Effect, Schema, SchemaGetter, SchemaIssue } from "effect"

/**
 * Keys that reach an object's prototype when assigned (`__proto__`) or shadow what code reads
 * from it: refused wherever user or hook data is merged into objects (SECURITY.md).
 */
export const prototypeKeys: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"])

/** Why `key` may not be merged into an object, or `undefined` when it may. */
export const prototypeKeyProblem = (key: string): string | undefined =>
  prototypeKeys.has(key) ? "__proto__, constructor and prototype are not allowed as keys" : undefined

/** Deepest nesting of objects and arrays accepted in any JSON body (`{"a":1}` is depth 1). */
export const maxJsonDepth = 64

/** Why `text` cannot be accepted, or `undefined` when it can. */
export const textProblem = (text: string): string | undefined => {
  if (text.includes("\u0000")) return "must not contain NUL (\\u0000)"
  if (!text.isWellFormed()) return "must be valid Unicode (no lone surrogates)"
  return undefined
}

/** One problem inside a JSON value: where (keys and indexes from the root) and what. */
export interface JsonProblem {
  readonly path: ReadonlyArray<string | number>
  readonly message: string
}

const tooDeep = `must not nest objects and arrays deeper than ${maxJsonDepth} levels`

/**
 * The first problem in a parsed JSON value: a key or string {@link textProblem} refuses, or
 * nesting deeper than `maxDepth`. Iterative, so a hostile document cannot exhaust the stack.
 */
export const jsonProblem = (value: unknown, maxDepth: number = maxJsonDepth): JsonProblem | undefined => {
  const stack: Array<{ readonly value: unknown; readonly path: ReadonlyArray<string | number> }> = [{ value, path: [] }]
  while (stack.length > 0) {
    const next = stack.pop()!
    const current = next.value
    if (typeof current === "string") {
      const message = textProblem(current)
      if (message !== undefined) return { path: next.path, message }
      continue
    }
    if (typeof current !== "object" || current === null) continue
    if (next.path.length >= maxDepth) return { path: next.path, message: tooDeep }
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], path: [...next.path, i] })
      continue
    }
    const keys = Object.keys(current)
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!
      const message = textProblem(key)
      if (message !== undefined) return { path: next.path, message: `a key ${message}` }
      stack.push({ value: (current as Record<string, unknown>)[key], path: [...next.path, key] })
    }
  }
  return undefined
}

/** The Schema issue of a {@link JsonProblem}, at its path (the offending value is never echoed). */
export const jsonProblemIssue = (problem: JsonProblem): SchemaIssue.Issue =>
  new SchemaIssue.Pointer(problem.path, new SchemaIssue.InvalidValue({ message: problem.message }))

/** Text a client may send: no NUL, valid Unicode. */
export const StrictText = Schema.String.check(
  Schema.makeFilter((text: string) => textProblem(text) ?? true, { expected: "text without NUL or lone surrogates" })
)

/** A JSON document a client may send: {@link jsonProblem} finds nothing (depth, NUL, surrogates). */
export const StrictJson = Schema.Json.check(
  Schema.makeFilter((value: Schema.Json) => {
    const problem = jsonProblem(value)
    return problem === undefined ? true : jsonProblemIssue(problem)
  })
)

const plainInteger = /^(0|-?[1-9][0-9]{0,15})$/

/**
 * An integer in a path or query parameter, written plainly (`12`, `-3`): no exponent, hex,
 * sign `+`, leading zero, fraction or surrounding space, and within the safe integer range.
 */
export const IntFromString = Schema.String.pipe(
  Schema.decodeTo(Schema.Int, {
    decode: SchemaGetter.transformEffect((text: string) =>
      plainInteger.test(text) && Number.isSafeInteger(Number(text))
        ? Effect.succeed(Number(text))
        : Effect.fail(
            new SchemaIssue.InvalidValue({
              message: "must be an integer written in decimal digits (no sign +, exponent, leading zero or spaces)"
            })
          )
    ),
    encode: SchemaGetter.transform((n: number) => String(n))
  })
)

/**
 * The payload schemas of an action route whose body is optional (`_disconnect`): the body itself,
 * or an empty (or `null`) body read as `{}`. HttpApi decodes an empty JSON body as `null` when one
 * payload schema encodes to exactly `null`.
 */
export const optionalBody = <S extends Schema.Top & { readonly Type: object }>(schema: S) =>
  [
    schema,
    Schema.Null.pipe(
      // Unnamed, so the documents show the empty body as an inline `null`, not as a named model.
      Schema.decodeTo(Schema.toType(schema).annotate({ identifier: undefined }), {
        decode: SchemaGetter.transform(() => ({}) as S["Type"]),
        encode: SchemaGetter.transform(() => null)
      })
    )
  ] as const
