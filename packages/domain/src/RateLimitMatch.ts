/**
 * Which rate-limit rules apply to a request and which counter of each it uses (spec 2.8, 4.6).
 *
 * A rule is compiled once ({@link compileRule}): its label selector parsed, its `path_match`
 * compiled (a regex runs on RE2, linear in the path, so no pattern can stall a request), its
 * methods and request types as sets, one resolver per bucket dimension. {@link indexRules} files
 * compiled rules by home namespace; {@link matchingRules} then looks only at the namespaces on
 * the request's path to `root`, since a rule applies in its namespace and every descendant and
 * rules at several levels stack (spec 4.6 rule 1). Pure: no clock, no I/O.
 */
import { Result, Schema } from "effect"
import { Definition } from "./RateLimit.ts"
import {
  type BucketDimension,
  compilePathMatch,
  type RateLimitDefinition,
  type RateLimitMode,
  type RequestType
} from "./RateLimitDefinition.ts"
import { matches, parseSelector } from "./Selector.ts"

/** What a rule is matched against: the request as it is about to go upstream. */
export interface RateLimitRequest {
  /** The connection's namespace path. */
  readonly namespace: string
  /** The frozen label snapshot (spec 2.5); the `actor` dimension reads its `svc/act/-/id`. */
  readonly labels: Readonly<Record<string, string>>
  /** The HTTP verb, compared exactly with `selector.methods`. */
  readonly method: string
  /** The final upstream URL path after connector templating or rewriting, without the query. */
  readonly path: string
  readonly requestType: RequestType
  readonly connectionId: string
  readonly connectorId: string
  readonly connectorVersion: number
}

/** A stored rule as the matcher needs it (a `RateLimit` resource is one). */
export interface RateLimitRuleSource {
  readonly id: string
  readonly namespace: string
  readonly definition: RateLimitDefinition
}

/** The counter of one rule a request falls into (spec 2.8 bucket dimensions). */
export interface RateLimitBucket {
  /**
   * Unambiguous and stable: the JSON array of `[dimension, value]` pairs in the rule's dimension
   * order (`[]` for the one global counter of a rule without dimensions).
   */
  readonly key: string
  /** Dimension to resolved value, as the request event's `rate_limit_bucket` shows it (spec 2.12). */
  readonly values: Readonly<Record<string, string>>
}

/** A rule ready to be matched: every part of its selector compiled. */
export interface CompiledRule {
  readonly id: string
  readonly namespace: string
  readonly mode: RateLimitMode
  readonly definition: RateLimitDefinition
  /** True when the selector matches (the namespace is checked by {@link matchingRules}). */
  readonly selects: (request: RateLimitRequest) => boolean
  /** The counter the request counts against. */
  readonly bucketOf: (request: RateLimitRequest) => RateLimitBucket
}

/** A rule that matched a request, with the counter it uses. */
export interface MatchedRule {
  readonly rule: CompiledRule
  readonly bucket: RateLimitBucket
}

/** Compiled rules filed by home namespace. */
export interface RuleIndex {
  readonly byNamespace: ReadonlyMap<string, ReadonlyArray<CompiledRule>>
  readonly size: number
}

type Resolver = (request: RateLimitRequest) => string

const actorLabel = "svc/act/-/id"

const labelValue = (labels: Readonly<Record<string, string>>, key: string): string =>
  Object.hasOwn(labels, key) ? (labels[key] ?? "") : ""

/** The value of one bucket dimension for a request; a missing value is `""` (spec 2.8). */
export const resolverOf = (dimension: BucketDimension): Resolver => {
  switch (dimension) {
    case "actor":
      // spec 2.8: the initiating actor's id; empty for system or unauthenticated traffic
      return (request) => labelValue(request.labels, actorLabel)
    case "connection":
      return (request) => request.connectionId
    case "connector":
      return (request) => request.connectorId
    case "connector_version":
      return (request) => String(request.connectorVersion)
    case "namespace":
      return (request) => request.namespace
    case "method":
      return (request) => request.method
    default: {
      const key = dimension.slice("labels/".length)
      return (request) => labelValue(request.labels, key)
    }
  }
}

/** The bucket function of a dimensions list: each distinct combination of values is its own counter. */
export const compileBucket = (
  dimensions: ReadonlyArray<BucketDimension>
): ((request: RateLimitRequest) => RateLimitBucket) => {
  if (dimensions.length === 0) {
    // spec 2.8: an empty dimensions list is one global counter
    const global: RateLimitBucket = { key: "[]", values: {} }
    return () => global
  }
  const resolvers = dimensions.map(resolverOf)
  return (request) => {
    const pairs: Array<[string, string]> = []
    const values: Record<string, string> = {}
    for (let i = 0; i < dimensions.length; i++) {
      const value = resolvers[i]!(request)
      pairs.push([dimensions[i]!, value])
      values[dimensions[i]!] = value
    }
    return { key: JSON.stringify(pairs), values }
  }
}

const anything = () => true

/**
 * Compiles a rule, or says why it cannot run (spec 4.6 rule 8: such a rule is logged and skipped):
 * a label selector that does not parse, or a regex RE2 does not accept (backreferences and
 * lookaround compile in JavaScript but not in a linear-time engine).
 */
export const compileRule = (rule: RateLimitRuleSource): Result.Result<CompiledRule, string> => {
  const { selector, bucket, mode } = rule.definition
  const checks: Array<(request: RateLimitRequest) => boolean> = []
  if (selector.label_selector !== undefined) {
    const parsed = parseSelector(selector.label_selector)
    if (Result.isFailure(parsed)) return Result.fail(`label_selector does not parse: ${selector.label_selector}`)
    const compiled = parsed.success
    checks.push((request) => matches(compiled, request.labels))
  }
  if (selector.methods !== undefined) {
    const methods = new Set(selector.methods)
    checks.push((request) => methods.has(request.method))
  }
  const requestTypes = new Set<string>(selector.request_types)
  checks.push((request) => requestTypes.has(request.requestType))
  if (selector.path_match !== undefined) {
    let pathMatches: (path: string) => boolean
    try {
      pathMatches = compilePathMatch(selector.path_match)
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error)
      return Result.fail(`path_match ${selector.path_match.kind} does not compile: ${reason}`)
    }
    checks.push((request) => pathMatches(request.path))
  }
  const selects =
    checks.length === 0
      ? anything
      : (request: RateLimitRequest) => {
          for (const check of checks) if (!check(request)) return false
          return true
        }
  return Result.succeed({
    id: rule.id,
    namespace: rule.namespace,
    mode,
    definition: rule.definition,
    selects,
    bucketOf: compileBucket(bucket.dimensions)
  })
}

const decodeDefinition = Schema.decodeUnknownResult(Definition)

/**
 * Compiles a stored rule whose definition is still undecoded (a row's JSON): a definition that no
 * longer decodes is a reason like any other.
 */
export const compileStoredRule = (rule: {
  readonly id: string
  readonly namespace: string
  readonly definition: unknown
}): Result.Result<CompiledRule, string> => {
  const decoded = decodeDefinition(rule.definition)
  if (Result.isFailure(decoded)) return Result.fail(`definition does not decode: ${decoded.failure.message}`)
  return compileRule({ id: rule.id, namespace: rule.namespace, definition: decoded.success })
}

/** True when a rule homed in `ruleNamespace` applies to a connection in `namespace` (itself or a descendant). */
export const appliesInNamespace = (ruleNamespace: string, namespace: string): boolean =>
  namespace === ruleNamespace ||
  (namespace.length > ruleNamespace.length &&
    namespace.startsWith(ruleNamespace) &&
    namespace[ruleNamespace.length] === ".")

/** Files compiled rules by home namespace, keeping their order within a namespace. */
export const indexRules = (rules: Iterable<CompiledRule>): RuleIndex => {
  const byNamespace = new Map<string, Array<CompiledRule>>()
  let size = 0
  for (const rule of rules) {
    const list = byNamespace.get(rule.namespace)
    if (list === undefined) byNamespace.set(rule.namespace, [rule])
    else list.push(rule)
    size++
  }
  return { byNamespace, size }
}

/** The index with no rules. */
export const emptyIndex: RuleIndex = { byNamespace: new Map(), size: 0 }

/**
 * Every rule that matches the request, with its bucket (spec 4.6 rule 1: no priority, rules at
 * every level from `root` down to the connection's namespace stack), outermost namespace first.
 * A rule that throws while it is evaluated is skipped for this request and handed to `onError`
 * (spec 4.6 rule 8); the other rules still apply.
 */
export const matchingRules = (
  index: RuleIndex,
  request: RateLimitRequest,
  onError?: (rule: CompiledRule, error: unknown) => void
): ReadonlyArray<MatchedRule> => {
  if (index.size === 0) return []
  const out: Array<MatchedRule> = []
  const namespace = request.namespace
  let end = namespace.indexOf(".")
  for (;;) {
    const rules = index.byNamespace.get(end === -1 ? namespace : namespace.slice(0, end))
    if (rules !== undefined) {
      for (const rule of rules) {
        try {
          if (rule.selects(request)) out.push({ rule, bucket: rule.bucketOf(request) })
        } catch (error) {
          onError?.(rule, error)
        }
      }
    }
    if (end === -1) return out
    end = namespace.indexOf(".", end + 1)
  }
}
