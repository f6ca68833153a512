import { assert, describe, it } from "@effect/vitest"
import { Exit, Result, Schema } from "effect"
import * as fc from "fast-check"
import { issueDetails } from "./Errors.ts"
import {
  everything,
  formatSelectorProblem,
  LabelSelector,
  matches,
  parseSelector,
  type Requirement,
  renderSelector,
  type Selector,
  type SelectorProblem
} from "./Selector.ts"

const parsed = (text: string): ReadonlyArray<Requirement> => {
  const result = parseSelector(text)
  if (Result.isFailure(result)) return assert.fail(`unexpected failure: ${JSON.stringify(result.failure)}`)
  assert.strictEqual(result.success.source, text)
  return result.success.requirements
}

const problems = (text: string): ReadonlyArray<SelectorProblem> => {
  const result = parseSelector(text)
  if (Result.isSuccess(result)) return assert.fail(`unexpected success: ${JSON.stringify(result.success)}`)
  return result.failure
}

const selector = (text: string): Selector => ({ requirements: parsed(text), source: text })

describe("parseSelector", () => {
  it("parses every form", () => {
    assert.deepStrictEqual(parsed("env=prod,tier==web,team!=a,svc/ns/-/id,!x.io/skip"), [
      { _tag: "Equals", key: "env", value: "prod" },
      { _tag: "Equals", key: "tier", value: "web" },
      { _tag: "NotEquals", key: "team", value: "a" },
      { _tag: "Exists", key: "svc/ns/-/id" },
      { _tag: "NotExists", key: "x.io/skip" }
    ])
  })

  it("accepts empty values for = and !=", () => {
    assert.deepStrictEqual(parsed("k=,j!=,i=="), [
      { _tag: "Equals", key: "k", value: "" },
      { _tag: "NotEquals", key: "j", value: "" },
      { _tag: "Equals", key: "i", value: "" }
    ])
  })

  it("trims whitespace around clauses and operators", () => {
    assert.deepStrictEqual(parsed("  a = 1 ,\tb != 2 , c == 3,  d  , !  e ,\n! f"), [
      { _tag: "Equals", key: "a", value: "1" },
      { _tag: "NotEquals", key: "b", value: "2" },
      { _tag: "Equals", key: "c", value: "3" },
      { _tag: "Exists", key: "d" },
      { _tag: "NotExists", key: "e" },
      { _tag: "NotExists", key: "f" }
    ])
  })

  it("treats an empty or blank selector as matching everything", () => {
    assert.deepStrictEqual(parsed(""), [])
    assert.deepStrictEqual(parsed("   \t"), [])
    assert.isTrue(matches(selector(" "), { a: "1" }))
  })

  it("accepts system labels with long namespace paths", () => {
    const path = `root.${Array.from({ length: 7 }, () => "a".repeat(63)).join(".")}`
    assert.deepStrictEqual(parsed(`svc/ns/-/id=${path},svc/cxr/team`), [
      { _tag: "Equals", key: "svc/ns/-/id", value: path },
      { _tag: "Exists", key: "svc/cxr/team" }
    ])
    assert.strictEqual(parsed(`${"k".repeat(512)}=${"v".repeat(512)}`).length, 1)
  })

  it.each([
    ["a=b=c", "a=b=c", 'value "b=c" contains invalid character "=" (allowed: A-Z a-z 0-9 . _ -)'],
    ["a!b", "a!b", 'key "a!b" contains invalid character "!" (allowed: A-Z a-z 0-9 . _ / -)'],
    ["=v", "=v", "missing key"],
    ["!=v", "!=v", "missing key"],
    ["!", "!", 'missing key after "!"'],
    ["!a=b", "!a=b", '"!" negates a bare key only; use key!=value'],
    ["!a!=b", "!a!=b", '"!" negates a bare key only; use key!=value'],
    ["my key=v", "my key=v", 'key "my key" contains invalid whitespace (allowed: A-Z a-z 0-9 . _ / -)'],
    ["env in (prod, dev)", "env in (prod", "set-based forms (in, notin) are not supported"],
    ["a=b c", "a=b c", 'value "b c" contains invalid whitespace (allowed: A-Z a-z 0-9 . _ -)'],
    ["a=x/y", "a=x/y", 'value "x/y" contains invalid character "/" (allowed: A-Z a-z 0-9 . _ -)'],
    ["a===b", "a===b", 'value "=b" contains invalid character "=" (allowed: A-Z a-z 0-9 . _ -)'],
    ["ü", "ü", 'key "ü" contains invalid character "ü" (allowed: A-Z a-z 0-9 . _ / -)'],
    [`${"k".repeat(513)}`, "k".repeat(513), "key longer than 512 characters"],
    [`k=${"v".repeat(513)}`, `k=${"v".repeat(513)}`, "value longer than 512 characters"]
  ])("rejects %j", (text, clause, message) => {
    assert.deepStrictEqual(problems(text)[0], { clause, index: 0, message })
  })

  it("reports every bad clause, including empty ones", () => {
    assert.deepStrictEqual(problems("a,,b=1, ,x!y,c,"), [
      { clause: "", index: 1, message: "empty clause" },
      { clause: "", index: 3, message: "empty clause" },
      { clause: "x!y", index: 4, message: 'key "x!y" contains invalid character "!" (allowed: A-Z a-z 0-9 . _ / -)' },
      { clause: "", index: 6, message: "empty clause" }
    ])
    assert.deepStrictEqual(problems(","), [
      { clause: "", index: 0, message: "empty clause" },
      { clause: "", index: 1, message: "empty clause" }
    ])
  })

  it("formats problems naming the clause", () => {
    assert.strictEqual(
      formatSelectorProblem({ clause: "a!b", index: 2, message: "bad" }),
      'invalid label selector clause "a!b": bad'
    )
    assert.strictEqual(
      formatSelectorProblem({ clause: "", index: 2, message: "empty clause" }),
      "invalid label selector: empty clause at position 3"
    )
    assert.strictEqual(
      formatSelectorProblem({ clause: "x".repeat(100), index: 0, message: "bad" }),
      `invalid label selector clause "${"x".repeat(80)}…": bad`
    )
  })
})

describe("matches", () => {
  const labels = { env: "prod", empty: "", "svc/ns/-/id": "root.acme" }

  it.each([
    ["env=prod", true],
    ["env==prod", true],
    ["env=dev", false],
    ["missing=prod", false],
    ["empty=", true],
    ["env=", false],
    ["env!=dev", true],
    ["env!=prod", false],
    ["missing!=prod", true],
    ["empty!=", false],
    ["env", true],
    ["empty", true],
    ["missing", false],
    ["!missing", true],
    ["!env", false],
    ["svc/ns/-/id=root.acme,env,!missing", true],
    ["svc/ns/-/id=root.acme,!env", false],
    ["", true]
  ])("%j → %s", (text, expected) => {
    assert.strictEqual(matches(selector(text), labels), expected)
  })

  it("never consults the prototype chain", () => {
    assert.isFalse(matches(selector("__proto__"), {}))
    assert.isFalse(matches(selector("constructor"), {}))
    assert.isFalse(matches(selector("toString"), {}))
    assert.isTrue(matches(selector("!__proto__,!constructor,!hasOwnProperty"), {}))
    assert.isTrue(matches(selector("constructor!=x"), {}))
    const own = JSON.parse('{"__proto__":"x","constructor":"y"}') as Record<string, string>
    assert.isTrue(matches(selector("__proto__=x,constructor=y"), own))
    assert.isFalse(matches(selector("!__proto__"), own))
    assert.isFalse(matches(selector("__proto__"), Object.create({ __proto__: "x" }) as Record<string, string>))
  })

  it("matches everything with the empty selector", () => {
    assert.isTrue(matches(everything, {}))
    assert.strictEqual(renderSelector(everything), "")
  })
})

describe("LabelSelector", () => {
  it("decodes text and encodes the canonical form", () => {
    const decoded = Schema.decodeUnknownSync(LabelSelector)(" a == 1 , !b ")
    assert.deepStrictEqual(decoded, {
      requirements: [
        { _tag: "Equals", key: "a", value: "1" },
        { _tag: "NotExists", key: "b" }
      ],
      source: " a == 1 , !b "
    })
    assert.strictEqual(Schema.encodeSync(LabelSelector)(decoded), "a=1,!b")
  })

  it("fails with a message listing every bad clause", () => {
    const exit = Schema.decodeUnknownExit(LabelSelector)("a!b,,c=d=e")
    assert.isTrue(Exit.isFailure(exit))
    const message = String(Exit.isFailure(exit) ? exit.cause : "")
    assert.include(message, 'invalid label selector clause "a!b": key "a!b" contains invalid character "!"')
    assert.include(message, "invalid label selector: empty clause at position 2")
    assert.include(message, 'invalid label selector clause "c=d=e": value "d=e" contains invalid character "="')
  })

  it("renders as a field-level error detail of the query", () => {
    const result = Schema.decodeUnknownResult(Schema.Struct({ labelSelector: LabelSelector }))({
      labelSelector: "x y,,a"
    })
    if (Result.isSuccess(result)) return assert.fail("expected failure")
    assert.deepStrictEqual(issueDetails(result.failure.issue, "query"), [
      {
        field: "query.labelSelector",
        message:
          'invalid label selector clause "x y": key "x y" contains invalid whitespace (allowed: A-Z a-z 0-9 . _ / -); ' +
          "invalid label selector: empty clause at position 2"
      }
    ])
  })
})

const keyAlphabet = ["a", "b", "svc/ns/env", "x.io/team", "__proto__", "constructor", "k-1_2"]
const valueAlphabet = ["", "1", "prod", "dev", "root.acme", "A_b-c.d"]
const arbKey = fc.constantFrom(...keyAlphabet)
const arbValue = fc.constantFrom(...valueAlphabet)
const arbRequirement: fc.Arbitrary<Requirement> = fc.oneof(
  fc.record({ _tag: fc.constant("Equals" as const), key: arbKey, value: arbValue }),
  fc.record({ _tag: fc.constant("NotEquals" as const), key: arbKey, value: arbValue }),
  fc.record({ _tag: fc.constant("Exists" as const), key: arbKey }),
  fc.record({ _tag: fc.constant("NotExists" as const), key: arbKey })
)
const arbSelector: fc.Arbitrary<Selector> = fc
  .array(arbRequirement, { maxLength: 6 })
  .map((requirements) => ({ requirements, source: "" }))
const arbLabels: fc.Arbitrary<Record<string, string>> = fc
  .array(fc.tuple(arbKey, arbValue), { maxLength: 6 })
  .map((entries) => {
    const labels: Record<string, string> = {}
    for (const [k, v] of entries) Object.defineProperty(labels, k, { value: v, enumerable: true, writable: true })
    return labels
  })

const referenceMatches = (requirements: ReadonlyArray<Requirement>, labels: Record<string, string>): boolean => {
  const map = new Map(Object.entries(labels))
  return requirements.every((r) =>
    r._tag === "Equals"
      ? map.get(r.key) === r.value
      : r._tag === "NotEquals"
        ? map.get(r.key) !== r.value
        : r._tag === "Exists"
          ? map.has(r.key)
          : !map.has(r.key)
  )
}

describe("properties", () => {
  it("render/parse round-trips", () => {
    fc.assert(
      fc.property(arbSelector, (s) => {
        const text = renderSelector(s)
        assert.deepStrictEqual(parsed(text), s.requirements)
        assert.strictEqual(renderSelector(selector(text)), text)
      })
    )
  })

  it("parse never throws and every problem names a clause of the input", () => {
    const check = (text: string) => {
      const result = parseSelector(text)
      if (Result.isSuccess(result)) {
        assert.deepStrictEqual(parsed(renderSelector(result.success)), result.success.requirements)
        return
      }
      const clauses = text.split(",")
      assert.isAbove(result.failure.length, 0)
      for (const p of result.failure) assert.strictEqual(p.clause, clauses[p.index]?.trim())
    }
    fc.assert(fc.property(fc.string(), check), { numRuns: 500 })
    fc.assert(fc.property(fc.string({ unit: "binary" }), check), { numRuns: 500 })
    fc.assert(fc.property(fc.string({ unit: "grapheme" }), check), { numRuns: 200 })
    const grammarish = fc
      .array(fc.constantFrom("a", "b", "=", "!", ",", " ", "==", "!=", "/", ".", "(", "in", ""), { maxLength: 12 })
      .map((parts) => parts.join(""))
    fc.assert(fc.property(grammarish, check), { numRuns: 1000 })
  })

  it("matches agrees with a reference implementation", () => {
    fc.assert(
      fc.property(arbSelector, arbLabels, (s, labels) => {
        assert.strictEqual(matches(s, labels), referenceMatches(s.requirements, labels))
      }),
      { numRuns: 2000 }
    )
  })
})
