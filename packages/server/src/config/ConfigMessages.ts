/**
 * Configuration problems as single lines an operator can act on: the dotted key, what was expected
 * (and the kind of value found, never the value: it may be a secret), a did-you-mean for an
 * unknown key, and the `SVC__…` environment variable when an override set the key.
 */
import type { SchemaAST, SchemaIssue } from "effect"
import { formatPath } from "@svc/domain/Errors"

/** Dotted key path (`api.port`) → the environment variable that set it (`SVC__api__port`). */
export type EnvSources = ReadonlyMap<string, string>

/** Optimal-string-alignment distance (a swap of two neighbours counts as one edit). */
export const editDistance = (a: string, b: string): number => {
  const rows = a.length + 1
  const cols = b.length + 1
  const d: Array<Array<number>> = Array.from({ length: rows }, (_, i) =>
    Array.from({ length: cols }, (_, j) => (i === 0 ? j : j === 0 ? i : 0))
  )
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let best = Math.min((d[i - 1]?.[j] ?? 0) + 1, (d[i]?.[j - 1] ?? 0) + 1, (d[i - 1]?.[j - 1] ?? 0) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, (d[i - 2]?.[j - 2] ?? 0) + 1)
      }
      ;(d[i] as Array<number>)[j] = best
    }
  }
  return d[a.length]?.[b.length] ?? 0
}

/** The known key closest to `key` (case-insensitively), when it is close enough to be a typo. */
export const closestKey = (key: string, known: ReadonlyArray<string>): string | undefined => {
  const limit = Math.max(1, Math.min(3, Math.floor(key.length / 3)))
  let best: { key: string; distance: number } | undefined
  for (const candidate of known) {
    const distance = editDistance(key.toLowerCase(), candidate.toLowerCase())
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { key: candidate, distance }
  }
  return best?.key
}

const kindOf = (input: unknown): string => {
  if (input === null) return "an empty value"
  if (Array.isArray(input)) return "a list"
  switch (typeof input) {
    case "string":
      return "a string"
    case "number":
      return Number.isInteger(input) ? "an integer" : "a number"
    case "boolean":
      return "a boolean"
    case "object":
      return "a mapping"
    default:
      return "nothing"
  }
}

const checkExpectations = (ast: SchemaAST.AST): Array<string> =>
  (ast.checks ?? []).flatMap((check) => {
    const expected = check.annotations?.expected
    return typeof expected === "string" ? [expected] : []
  })

/** What a value of `ast` looks like, in words (`an integer between 0 and 65535`, `"pglite" or "postgres"`). */
export const describeExpected = (ast: SchemaAST.AST): string => {
  const checks = checkExpectations(ast)
  const refine = (noun: string, rest: ReadonlyArray<string>) =>
    [noun, ...rest.map((c) => c.replace(/^a value /, ""))].join(" ").replace(/ with a length of/, " of length")
  switch (ast._tag) {
    case "Number": {
      const integer = checks.includes("an integer")
      return refine(
        integer ? "an integer" : "a number",
        checks.filter((c) => c !== "an integer")
      )
    }
    case "String":
      return refine("a string", checks)
    case "Boolean":
      return "true or false"
    case "Literal":
      return JSON.stringify(ast.literal)
    case "Union": {
      const members = [...new Set(ast.types.map(describeExpected))]
      return members.length > 2 && ast.types.every((t) => t._tag === "Literal")
        ? `one of ${members.join(", ")}`
        : members.join(" or ")
    }
    case "Arrays":
      return "a list"
    case "Objects":
      return "a mapping"
    case "Null":
      return "an empty value"
    default:
      return checks[0] ?? "a valid value"
  }
}

/** `expected X, got Y`; the kind found is left out when it is the kind expected (a literal of the wrong spelling). */
const mismatch = (ast: SchemaAST.AST, input: unknown): string => {
  const literals = ast._tag === "Union" ? ast.types : [ast]
  const sameKind = literals.every((t) => t._tag === "Literal" && typeof t.literal === typeof input)
  return sameKind ? `expected ${describeExpected(ast)}` : `expected ${describeExpected(ast)}, got ${kindOf(input)}`
}

const knownKeys = (ast: SchemaAST.AST): ReadonlyArray<string> =>
  ast._tag === "Objects" ? ast.propertySignatures.flatMap((p) => (typeof p.name === "string" ? [p.name] : [])) : []

const unexpectedKey = (path: ReadonlyArray<PropertyKey>, ast: SchemaAST.AST): string => {
  const key = path[path.length - 1]
  const known = knownKeys(ast)
  if (typeof key !== "string" || known.length === 0) return "Unexpected key"
  const close = closestKey(key, known)
  if (close !== undefined) return `Unexpected key; did you mean \`${close}\`?`
  return `Unexpected key; known keys here: ${known.join(", ")}`
}

const filterMessage = (issue: SchemaIssue.Filter): string | undefined => {
  const annotations = issue.filter.annotations
  const message = annotations?.message ?? annotations?.description
  if (typeof message === "string") return message
  if (issue.issue._tag !== "InvalidValue") return undefined
  const own = issue.issue.annotations?.message
  if (typeof own === "string") return own
  return typeof annotations?.expected === "string" ? `expected ${annotations.expected}` : "Invalid value"
}

interface Located {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

const walk = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>): ReadonlyArray<Located> => {
  switch (issue._tag) {
    case "Pointer":
      return walk(issue.issue, [...path, ...issue.path])
    case "Encoding":
      return walk(issue.issue, path)
    case "Composite":
      return issue.issues.flatMap((inner) => walk(inner, path))
    case "AnyOf":
      return issue.issues.length > 0
        ? issue.issues.flatMap((inner) => walk(inner, path))
        : [{ path, message: mismatch(issue.ast, issue.input) }]
    case "Filter": {
      const message = filterMessage(issue)
      return message === undefined ? walk(issue.issue, path) : [{ path, message }]
    }
    case "InvalidType":
      return [{ path, message: mismatch(issue.ast, issue.input) }]
    case "InvalidValue": {
      const message = issue.annotations?.message
      const expected = issue.annotations?.expected
      return [
        {
          path,
          message:
            typeof message === "string"
              ? message
              : typeof expected === "string"
                ? `expected ${expected}`
                : "Invalid value"
        }
      ]
    }
    case "MissingKey":
      return [{ path, message: "Missing key" }]
    case "UnexpectedKey":
      return [{ path, message: unexpectedKey(path, issue.ast) }]
    case "Forbidden":
      return [{ path, message: "Forbidden value" }]
    case "OneOf":
      return [{ path, message: "matches more than one allowed shape" }]
  }
}

/** The environment variable that set `key`, one of its parents or one of its children, if any. */
export const envSourceOf = (key: string, sources: EnvSources): string | undefined => {
  for (let at = key; at !== ""; ) {
    const name = sources.get(at)
    if (name !== undefined) return name
    const cut = Math.max(at.lastIndexOf("."), at.lastIndexOf("["))
    at = cut < 0 ? "" : at.slice(0, cut)
  }
  for (const [at, name] of sources) if (at.startsWith(`${key}.`)) return name
  return undefined
}

/** Appends `(set by SVC__…)` to a `key: message` problem whose key an environment override set. */
export const withEnvSource = (problem: string, sources: EnvSources): string => {
  if (sources.size === 0) return problem
  const colon = problem.indexOf(": ")
  if (colon < 0) return problem
  const name = envSourceOf(problem.slice(0, colon), sources)
  return name === undefined ? problem : `${problem} (set by ${name})`
}

/** One `key: message` line per decoding problem; the input's values never appear, only their kind. */
export const decodeProblems = (issue: SchemaIssue.Issue, sources: EnvSources): ReadonlyArray<string> => {
  return walk(issue, []).map((l) => withEnvSource(`${formatPath(l.path)}: ${l.message}`, sources))
}
