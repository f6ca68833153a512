/**
 * The `definition` of a rate-limit resource (spec 2.8), snake_case on the wire (API-CONVENTIONS).
 *
 * Decoding fills the defaults, so a decoded (stored, returned) definition always carries `mode`,
 * `selector.request_types` and `bucket.dimensions`. Windows lie between 1s and 31d. A glob
 * `path_match` has no `**`: every `*` stays inside one path segment (use `prefix` for subtrees); a
 * `regex` is unanchored and runs on RE2 (`compilePathMatch`). Effect Schema has no per-struct
 * strictness, so unknown keys are rejected by the parse option `onExcessProperty: "error"`: decode
 * with `definitionParseOptions` (the HTTP payload options are the same).
 */
import { Effect, Schema, type SchemaAST } from "effect"
import { RE2JS } from "re2js"
import { PositiveDurationString, parseDuration } from "./Duration.ts"

/** Parse options for client definitions: every problem reported, unknown keys rejected. */
export const definitionParseOptions = {
  errors: "all",
  onExcessProperty: "error"
} as const satisfies SchemaAST.ParseOptions

const uniqueItems = <T>() =>
  Schema.makeFilter<ReadonlyArray<T>>(
    (items) =>
      items.flatMap((item, index) =>
        items.indexOf(item) < index ? [{ path: [index], issue: "must not repeat a value" }] : []
      ),
    { message: "must not repeat a value", expected: "unique items", toJsonSchema: () => ({ uniqueItems: true }) }
  )

/** Rule mode (spec 3.4): `enforce` rejects, `observe` only counts and records. */
export const RateLimitMode = Schema.Literals(["enforce", "observe"])
export type RateLimitMode = typeof RateLimitMode.Type

/** Request kinds a selector can match (spec 2.8 `request_types`). */
export const requestTypes = [
  "proxy",
  "probe",
  "oauth2_token_exchange",
  "oauth2_refresh",
  "oauth2_revoke",
  "oauth2_client_credentials"
] as const

/** One request kind of `selector.request_types`. */
export const RequestType = Schema.Literals(requestTypes)
export type RequestType = typeof RequestType.Type

/** `request_types` when the selector omits it (spec 2.8). */
export const defaultRequestTypes: ReadonlyArray<RequestType> = ["proxy", "probe"]

/** Dimension names with a fixed meaning (spec 2.8 bucket dimensions). */
export const reservedDimensions = [
  "actor",
  "connection",
  "connector",
  "connector_version",
  "namespace",
  "method"
] as const

/** A reserved dimension name or `labels/<key>`. */
export type BucketDimension = (typeof reservedDimensions)[number] | `labels/${string}`

const maxLabelKeyLength = 253 + 1 + 63

const isBucketDimension = (text: string): text is BucketDimension =>
  (reservedDimensions as ReadonlyArray<string>).includes(text) ||
  (text.startsWith("labels/") && text.length > 7 && text.length <= 7 + maxLabelKeyLength)

/** One bucket dimension: a reserved name or `labels/<key>` with a non-empty label key. */
export const BucketDimension = Schema.String.pipe(
  Schema.refine(isBucketDimension, {
    expected: "a bucket dimension",
    message: `must be one of ${reservedDimensions.join(", ")} or labels/<key>`
  })
)

/** How `path_match.value` is compared with the upstream path. */
export const PathMatchKind = Schema.Literals(["prefix", "glob", "regex"])
export type PathMatchKind = typeof PathMatchKind.Type

/** Longest accepted `path_match.value`. */
export const maxPathMatchLength = 1024

/** Why RE2 (the engine the matcher runs) cannot compile `value`: backreferences and lookaround among others. */
const regexError = (value: string): string | undefined => {
  try {
    RE2JS.compile(value)
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : String(error)
  }
}

/** `selector.path_match`: prefix and glob values start with `/`; a regex value must compile. */
export const PathMatch = Schema.Struct({
  kind: PathMatchKind,
  value: Schema.String.check(
    Schema.isMinLength(1, { message: "must not be empty" }),
    Schema.isMaxLength(maxPathMatchLength, { message: `must be at most ${maxPathMatchLength} characters` })
  )
})
  .check(
    // spec 2.8: path_match applies to the final upstream URL path, which always starts with "/"
    Schema.makeFilter(
      (match) =>
        match.kind === "regex" ||
        match.value.startsWith("/") || { path: ["value"], issue: "a prefix or glob value must start with /" },
      { message: "a prefix or glob value must start with /" }
    ),
    Schema.makeFilter(
      (match) => {
        const error = match.kind === "regex" ? regexError(match.value) : undefined
        return error === undefined || { path: ["value"], issue: `must be a valid regular expression: ${error}` }
      },
      { expected: "a valid regular expression" }
    )
  )
  .annotate({ identifier: "PathMatch" })
export type PathMatch = typeof PathMatch.Type

const matchSegment = (pattern: ReadonlyArray<string>, text: ReadonlyArray<string>): boolean => {
  let p = 0
  let t = 0
  let star = -1
  let resume = 0
  while (t < text.length) {
    if (pattern[p] === "*") {
      star = p++
      resume = t
    } else if (p < pattern.length && (pattern[p] === "?" || pattern[p] === text[t])) {
      p++
      t++
    } else if (star >= 0) {
      p = star + 1
      t = ++resume
    } else {
      return false
    }
  }
  while (pattern[p] === "*") p++
  return p === pattern.length
}

/**
 * Predicate of a path_match on an upstream path: `prefix` is a plain string prefix; `glob` matches
 * the whole path with `*` (any run of non-`/` characters) and `?` (one non-`/` character), all else
 * literal; `regex` is an unanchored search run by RE2 (linear in the path, so no pattern can stall a
 * request), which throws for a value RE2 does not compile (backreferences, lookaround).
 */
export const compilePathMatch = (pathMatch: PathMatch): ((path: string) => boolean) => {
  switch (pathMatch.kind) {
    case "prefix": {
      const prefix = pathMatch.value
      return (path) => path.startsWith(prefix)
    }
    case "glob": {
      // spec 2.8: in glob, `*` does not cross `/`, so pattern and path have the same segments
      const segments = pathMatch.value.split("/").map((segment) => Array.from(segment))
      return (path) => {
        const parts = path.split("/")
        return parts.length === segments.length && segments.every((s, i) => matchSegment(s, Array.from(parts[i]!)))
      }
    }
    case "regex": {
      const regex = RE2JS.compile(pathMatch.value)
      return (path) => regex.test(path)
    }
  }
}

/** An upper-case HTTP method token. */
export const HttpMethod = Schema.String.check(
  Schema.isPattern(/^[A-Z]+$/, { message: "must be an upper-case HTTP method such as GET or POST" })
)

/** How a label selector is checked: the problem with `text`, or `undefined` when it is valid. */
export type LabelSelectorValidator = (text: string) => string | undefined

const makeSelector = (validateLabelSelector: LabelSelectorValidator) =>
  Schema.Struct({
    label_selector: Schema.optionalKey(
      Schema.String.check(
        Schema.isMinLength(1, { message: "must not be empty; omit label_selector to match any labels" }),
        Schema.makeFilter((text: string) => (text === "" ? undefined : validateLabelSelector(text)), {
          expected: "a label selector"
        })
      )
    ),
    methods: Schema.optionalKey(
      Schema.Array(HttpMethod).check(
        Schema.isMinLength(1, { message: "must not be empty; omit methods to match any method" }),
        uniqueItems<string>()
      )
    ),
    path_match: Schema.optionalKey(PathMatch),
    request_types: Schema.Array(RequestType).pipe(
      // spec 7: an explicit empty request_types array is rejected at validation
      Schema.check(
        Schema.isMinLength(1, { message: "must not be empty; omit request_types for the default [proxy, probe]" }),
        uniqueItems<RequestType>()
      ),
      Schema.withDecodingDefaultKey(Effect.succeed(defaultRequestTypes))
    )
  })

/** `bucket`: each distinct combination of dimension values is its own counter; `[]` is one global counter. */
export const Bucket = Schema.Struct({
  dimensions: Schema.Array(BucketDimension).pipe(
    Schema.check(uniqueItems<string>()),
    Schema.withDecodingDefaultKey(Effect.succeed([]))
  )
}).annotate({ identifier: "RateLimitBucket" })
export type Bucket = typeof Bucket.Type

/** Shortest and longest accepted window, in milliseconds. */
export const windowBounds = { minMs: 1_000, maxMs: 31 * 86_400_000 } as const

/** A window duration between 1s and 31d. */
export const WindowDuration = PositiveDurationString.check(
  Schema.makeFilter(
    (text: string) => {
      const ms = parseDuration(text)
      return ms === undefined || ms === 0 || (ms >= windowBounds.minMs && ms <= windowBounds.maxMs)
    },
    { message: "must be between 1s and 31d" }
  )
)

const atLeastOne = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { message: "must be an integer of at least 1" }))

/** `fixed_window`: counter resets at boundaries floor(now / window). */
export const FixedWindow = Schema.Struct({ window: WindowDuration, limit: atLeastOne }).annotate({
  identifier: "FixedWindow"
})
export type FixedWindow = typeof FixedWindow.Type

/** `sliding_window`: exact rolling log or weighted two-window counter. */
export const SlidingWindow = Schema.Struct({
  window: WindowDuration,
  limit: atLeastOne,
  mode: Schema.Literals(["log", "counter"])
}).annotate({ identifier: "SlidingWindow" })
export type SlidingWindow = typeof SlidingWindow.Type

/** `token_bucket`: integer burst `capacity`, `refill_rate` tokens per second (fractional allowed). */
export const TokenBucket = Schema.Struct({
  capacity: atLeastOne,
  refill_rate: Schema.Finite.check(Schema.isGreaterThan(0, { message: "must be greater than 0" }))
}).annotate({ identifier: "TokenBucket" })
export type TokenBucket = typeof TokenBucket.Type

/** Exactly one algorithm; narrow with `"fixed_window" in algorithm`. */
export type Algorithm =
  | { readonly fixed_window: FixedWindow }
  | { readonly sliding_window: SlidingWindow }
  | { readonly token_bucket: TokenBucket }

const algorithmKeys = ["fixed_window", "sliding_window", "token_bucket"] as const

/** `algorithm`: an object with exactly one of fixed_window, sliding_window, token_bucket. */
export const Algorithm = Schema.Struct({
  fixed_window: Schema.optionalKey(FixedWindow),
  sliding_window: Schema.optionalKey(SlidingWindow),
  token_bucket: Schema.optionalKey(TokenBucket)
})
  .pipe(
    // spec 7: an algorithm that is not exactly one of the three is rejected at validation
    Schema.refine((value): value is Algorithm => algorithmKeys.filter((key) => value[key] !== undefined).length === 1, {
      expected: "exactly one algorithm",
      message: "must have exactly one of fixed_window, sliding_window, token_bucket"
    })
  )
  .annotate({ identifier: "RateLimitAlgorithm" })

/** Builds the definition schema with the label-selector check (spec 2.6) wired in. */
export const makeRateLimitDefinition = (options: { readonly validateLabelSelector: LabelSelectorValidator }) =>
  Schema.Struct({
    mode: RateLimitMode.pipe(Schema.withDecodingDefaultKey(Effect.succeed("enforce"))),
    selector: makeSelector(options.validateLabelSelector).pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
    bucket: Bucket.pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
    algorithm: Algorithm
  })

/** The definition schema with a label-selector check that accepts any non-empty string. */
export const RateLimitDefinition = makeRateLimitDefinition({ validateLabelSelector: () => undefined })

/** The decoded definition: defaults filled, exactly one algorithm. */
export type RateLimitDefinition = typeof RateLimitDefinition.Type

/** The definition as a client sends it (defaulted keys optional). */
export type RateLimitDefinitionInput = typeof RateLimitDefinition.Encoded

/** The same schema as `RateLimitDefinition`, named for payload declarations. */
export const RateLimitDefinitionInput = RateLimitDefinition

/** The selector of a decoded definition. */
export type RateLimitSelector = RateLimitDefinition["selector"]

/** Decodes a client definition with `definitionParseOptions`. */
export const decodeRateLimitDefinition = Schema.decodeUnknownEffect(RateLimitDefinition, definitionParseOptions)
