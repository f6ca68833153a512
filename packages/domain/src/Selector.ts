/**
 * Label selectors (spec 2.6): parsing, canonical rendering and in-memory matching.
 *
 * Grammar: comma-separated clauses, ANDed; whitespace around clauses and operators is ignored.
 * - `key=value` / `key==value`: key present and equal.
 * - `key!=value`: key absent, or present with another value.
 * - `key`: key present with any value; `!key`: key absent.
 * - An empty or blank selector has no requirements and matches everything.
 * Keys use `[A-Za-z0-9._/-]` (at least one character), values `[A-Za-z0-9._-]` (possibly empty),
 * each at most 512 characters so that system labels (`svc/ns/-/id=<namespace path>`) fit.
 */
import { Effect, Result, Schema, SchemaIssue, SchemaTransformation } from "effect"

/** Longest accepted key in a selector clause, in characters. */
export const selectorKeyMaxLength = 512

/** Longest accepted value in a selector clause, in characters. */
export const selectorValueMaxLength = 512

/** One clause of a selector. */
export type Requirement =
  | { readonly _tag: "Equals"; readonly key: string; readonly value: string }
  | { readonly _tag: "NotEquals"; readonly key: string; readonly value: string }
  | { readonly _tag: "Exists"; readonly key: string }
  | { readonly _tag: "NotExists"; readonly key: string }

/** A parsed selector: its requirements (ANDed) and the text it was parsed from. */
export interface Selector {
  readonly requirements: ReadonlyArray<Requirement>
  readonly source: string
}

/** A rejected clause: its trimmed text, its 0-based position among the clauses, and why. */
export interface SelectorProblem {
  readonly clause: string
  readonly index: number
  readonly message: string
}

/** The selector that matches every label set. */
export const everything: Selector = { requirements: [], source: "" }

const keyPattern = /^[A-Za-z0-9._/-]+$/
const valuePattern = /^[A-Za-z0-9._-]*$/
const keyForbidden = /[^A-Za-z0-9._/-]/u
const valueForbidden = /[^A-Za-z0-9._-]/u
const setSyntax = /\s(?:in|notin)\s*\(/i

const describeChar = (text: string, forbidden: RegExp): string => {
  const found = forbidden.exec(text)?.[0] ?? ""
  return /\s/.test(found) ? "whitespace" : `character ${JSON.stringify(found)}`
}

const checkKey = (key: string): string | undefined => {
  if (key === "") return "missing key"
  if (key.length > selectorKeyMaxLength) return `key longer than ${selectorKeyMaxLength} characters`
  if (keyPattern.test(key)) return undefined
  if (setSyntax.test(key)) return "set-based forms (in, notin) are not supported"
  return `key ${JSON.stringify(key)} contains invalid ${describeChar(key, keyForbidden)} (allowed: A-Z a-z 0-9 . _ / -)`
}

const checkValue = (value: string): string | undefined => {
  if (value.length > selectorValueMaxLength) return `value longer than ${selectorValueMaxLength} characters`
  if (valuePattern.test(value)) return undefined
  return `value ${JSON.stringify(value)} contains invalid ${describeChar(value, valueForbidden)} (allowed: A-Z a-z 0-9 . _ -)`
}

const parseClause = (clause: string): Result.Result<Requirement, string> => {
  if (clause === "") return Result.fail("empty clause")
  const eq = clause.indexOf("=")
  if (eq === -1) {
    if (clause.startsWith("!")) {
      const key = clause.slice(1).trim()
      if (key === "") return Result.fail('missing key after "!"')
      const problem = checkKey(key)
      return problem === undefined ? Result.succeed({ _tag: "NotExists", key }) : Result.fail(problem)
    }
    const problem = checkKey(clause)
    return problem === undefined ? Result.succeed({ _tag: "Exists", key: clause }) : Result.fail(problem)
  }
  const negated = eq > 0 && clause[eq - 1] === "!"
  const doubled = !negated && clause[eq + 1] === "="
  const key = clause.slice(0, negated ? eq - 1 : eq).trim()
  const value = clause.slice(doubled ? eq + 2 : eq + 1).trim()
  if (key.startsWith("!")) return Result.fail('"!" negates a bare key only; use key!=value')
  const problem = checkKey(key) ?? checkValue(value)
  if (problem !== undefined) return Result.fail(problem)
  return Result.succeed(negated ? { _tag: "NotEquals", key, value } : { _tag: "Equals", key, value })
}

/** Parses selector text; on failure returns every rejected clause, in order (spec 2.6). */
export const parseSelector = (text: string): Result.Result<Selector, ReadonlyArray<SelectorProblem>> => {
  if (text.trim() === "") return Result.succeed({ requirements: [], source: text })
  const requirements: Array<Requirement> = []
  const problems: Array<SelectorProblem> = []
  text.split(",").forEach((raw, index) => {
    const clause = raw.trim()
    const parsed = parseClause(clause)
    if (Result.isSuccess(parsed)) requirements.push(parsed.success)
    else problems.push({ clause, index, message: parsed.failure })
  })
  return problems.length === 0 ? Result.succeed({ requirements, source: text }) : Result.fail(problems)
}

const maxShownClause = 80

/** One human-readable line per problem, e.g. `invalid label selector clause "a!b": …`. */
export const formatSelectorProblem = (problem: SelectorProblem): string => {
  if (problem.clause === "") return `invalid label selector: empty clause at position ${problem.index + 1}`
  const shown = problem.clause.length > maxShownClause ? `${problem.clause.slice(0, maxShownClause)}…` : problem.clause
  return `invalid label selector clause ${JSON.stringify(shown)}: ${problem.message}`
}

/** True when `labels` satisfy every requirement; only own properties count as labels (spec 2.6). */
export const matches = (selector: Selector, labels: Readonly<Record<string, string>>): boolean => {
  for (const requirement of selector.requirements) {
    const present = Object.hasOwn(labels, requirement.key)
    switch (requirement._tag) {
      case "Equals":
        if (!present || labels[requirement.key] !== requirement.value) return false
        break
      case "NotEquals":
        if (present && labels[requirement.key] === requirement.value) return false
        break
      case "Exists":
        if (!present) return false
        break
      case "NotExists":
        if (present) return false
        break
    }
  }
  return true
}

const renderRequirement = (requirement: Requirement): string => {
  switch (requirement._tag) {
    case "Equals":
      return `${requirement.key}=${requirement.value}`
    case "NotEquals":
      return `${requirement.key}!=${requirement.value}`
    case "Exists":
      return requirement.key
    case "NotExists":
      return `!${requirement.key}`
  }
}

/** Canonical text (`k=v,k!=v,k,!k`); `parseSelector` of the result yields the same requirements. */
export const renderSelector = (selector: Selector): string => selector.requirements.map(renderRequirement).join(",")

const RequirementSchema = Schema.Union([
  Schema.TaggedStruct("Equals", { key: Schema.String, value: Schema.String }),
  Schema.TaggedStruct("NotEquals", { key: Schema.String, value: Schema.String }),
  Schema.TaggedStruct("Exists", { key: Schema.String }),
  Schema.TaggedStruct("NotExists", { key: Schema.String })
])

const SelectorFromSelf: Schema.Codec<Selector> = Schema.Struct({
  requirements: Schema.Array(RequirementSchema),
  source: Schema.String
})

/** Selector text (the `labelSelector` query parameter) decoded into a {@link Selector}. */
export const LabelSelector: Schema.Codec<Selector, string> = Schema.String.pipe(
  Schema.decodeTo(
    SelectorFromSelf,
    SchemaTransformation.transformEffect<Selector, string>({
      decode: (text, options) =>
        Result.match(parseSelector(text), {
          onSuccess: Effect.succeed,
          onFailure: (problems) =>
            Effect.fail(
              new SchemaIssue.InvalidValue({ message: problems.map(formatSelectorProblem).join("; ") }, text, options)
            )
        }),
      encode: (selector) => Effect.succeed(renderSelector(selector))
    })
  )
).annotate({
  description: "Label selector (spec 2.6): comma-separated clauses key=value, key==value, key!=value, key, !key"
})
