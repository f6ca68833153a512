import { assert, describe, it } from "@effect/vitest"
import { Exit, Schema } from "effect"
import * as fc from "fast-check"
import {
  IntFromString,
  jsonProblem,
  maxJsonDepth,
  optionalBody,
  StrictJson,
  StrictText,
  textProblem
} from "./StrictInput.ts"

/** Text with at least one NUL or lone surrogate somewhere in it. */
const unstorable = fc
  .tuple(fc.string(), fc.constantFrom("\u0000", "\ud800", "\udfff", "\udc00x", "a\ud83d"), fc.string())
  .map(([a, bad, b]) => a + bad + b)

const nest = (depth: number): unknown => {
  let value: unknown = "leaf"
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value }
  return value
}

describe("StrictInput", () => {
  it("textProblem refuses every string holding NUL or a lone surrogate, and nothing else", () => {
    fc.assert(fc.property(unstorable, (text) => textProblem(text) !== undefined))
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (text) => textProblem(text.replaceAll("\u0000", "")) === undefined)
    )
    assert.strictEqual(textProblem("tab\tnewline\n😀 ü"), undefined)
  })

  it("jsonProblem finds a refused string or key anywhere and names its path", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), unstorable, fc.boolean(), (doc, bad, asKey) => {
        const value = { outer: [doc, asKey ? { [bad]: 1 } : { v: bad }] }
        const problem = jsonProblem(value)
        assert.isDefined(problem)
        if (jsonProblem(doc) === undefined)
          assert.deepStrictEqual(problem?.path, asKey ? ["outer", 1] : ["outer", 1, "v"])
      })
    )
  })

  it(`jsonProblem accepts nesting up to ${maxJsonDepth} levels and refuses one more, without recursion`, () => {
    assert.strictEqual(jsonProblem(nest(maxJsonDepth)), undefined)
    assert.strictEqual(jsonProblem(nest(maxJsonDepth + 1))?.path.length, maxJsonDepth)
    assert.isDefined(jsonProblem(nest(200_000)))
  })

  it("StrictText and StrictJson fail typed, never throw a defect", () => {
    fc.assert(
      fc.property(unstorable, (bad) => {
        assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(StrictText)(bad)))
        assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(StrictJson)({ a: [bad] })))
      })
    )
    assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(StrictJson)(nest(maxJsonDepth + 1))))
    assert.isTrue(Exit.isSuccess(Schema.decodeUnknownExit(StrictJson)(nest(maxJsonDepth))))
  })

  it("IntFromString takes plain decimal integers only", () => {
    for (const ok of ["0", "1", "42", "-3", "1000", "9007199254740991"]) {
      assert.strictEqual(Schema.decodeUnknownSync(IntFromString)(ok), Number(ok), ok)
    }
    for (const bad of [
      "1e3",
      "0x10",
      " 1",
      "1 ",
      "01",
      "+1",
      "1.0",
      "1.5",
      "",
      "-",
      "-0",
      "NaN",
      "Infinity",
      "9007199254740993",
      "１"
    ]) {
      assert.isTrue(Exit.isFailure(Schema.decodeUnknownExit(IntFromString)(bad)), bad)
    }
    fc.assert(
      fc.property(fc.string(), (text) => {
        const exit = Schema.decodeUnknownExit(IntFromString)(text)
        if (Exit.isSuccess(exit)) assert.strictEqual(String(exit.value), text)
      })
    )
  })

  it("optionalBody reads an empty (null) body as {} and still checks a given one", () => {
    const Body = Schema.Struct({ n: Schema.optionalKey(Schema.Int) })
    const decode = Schema.decodeUnknownExit(Schema.Union(optionalBody(Body)))
    assert.deepStrictEqual(decode(null), Exit.succeed({}))
    assert.deepStrictEqual(decode({ n: 2 }), Exit.succeed({ n: 2 }))
    assert.isTrue(Exit.isFailure(decode({ n: "x" })))
  })
})
