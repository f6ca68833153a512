import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Option, Schema, SchemaIssue } from "effect"
import * as fc from "fast-check"
import {
  compilePathMatch,
  decodeRateLimitDefinition,
  definitionParseOptions,
  makeRateLimitDefinition,
  type PathMatch,
  RateLimitDefinition
} from "./RateLimitDefinition.ts"

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

type Problem = { readonly path: string; readonly message: string }

const problems = (input: unknown, schema: typeof RateLimitDefinition = RateLimitDefinition): Array<Problem> => {
  const exit = Schema.decodeUnknownExit(schema)(input, definitionParseOptions)
  const error = Exit.findErrorOption(exit)
  if (Option.isNone(error)) return []
  return formatter(error.value.issue).issues.map((issue) => ({
    path: (issue.path ?? []).map((key) => String(typeof key === "object" ? key.key : key)).join("."),
    message: issue.message
  }))
}

const decoded = (input: unknown): RateLimitDefinition => {
  const exit = Schema.decodeUnknownExit(RateLimitDefinition)(input, definitionParseOptions)
  if (Exit.isFailure(exit)) throw new Error(`expected ${JSON.stringify(input)} to decode: ${String(exit.cause)}`)
  return exit.value
}

const fixed = { fixed_window: { window: "1m", limit: 10 } }
const withSelector = (selector: unknown) => ({ selector, algorithm: fixed })
const exactlyOne = "must have exactly one of fixed_window, sliding_window, token_bucket"
const dimensionMessage =
  "must be one of actor, connection, connector, connector_version, namespace, method or labels/<key>"

describe("RateLimitDefinition defaults", () => {
  it.effect("fills mode, request_types and dimensions when omitted", () =>
    Effect.gen(function* () {
      const definition = yield* Schema.decodeUnknownEffect(RateLimitDefinition)(
        { algorithm: fixed },
        definitionParseOptions
      )
      assert.deepStrictEqual(definition, {
        mode: "enforce",
        selector: { request_types: ["proxy", "probe"] },
        bucket: { dimensions: [] },
        algorithm: fixed
      })
      assert.deepStrictEqual(Schema.encodeSync(RateLimitDefinition)(definition), definition)
    })
  )

  it.effect("keeps explicit values", () =>
    Effect.gen(function* () {
      const input = {
        mode: "observe",
        selector: {
          label_selector: "env=prod,!canary",
          methods: ["GET", "POST"],
          path_match: { kind: "glob", value: "/v1/users/*/repos" },
          request_types: ["oauth2_refresh", "oauth2_token_exchange", "oauth2_revoke", "oauth2_client_credentials"]
        },
        bucket: { dimensions: ["actor", "connection", "connector", "connector_version", "namespace", "method"] },
        algorithm: { sliding_window: { window: "1h30m", limit: 500, mode: "counter" } }
      } as const
      assert.deepStrictEqual(yield* decodeRateLimitDefinition(input), input)
    })
  )

  it("accepts each algorithm", () => {
    for (const algorithm of [
      { fixed_window: { window: "1s", limit: 1 } },
      { sliding_window: { window: "31d", limit: 1_000_000, mode: "log" } },
      { token_bucket: { capacity: 20, refill_rate: 0.25 } },
      { token_bucket: { capacity: 1, refill_rate: 1000 } }
    ] as const) {
      assert.deepStrictEqual(decoded({ algorithm }).algorithm, algorithm)
    }
  })

  it("accepts labels/<key> dimensions, system label keys included", () => {
    const dimensions = ["labels/team", "labels/svc/act/-/id", "labels/example.com/tier"] as const
    assert.deepStrictEqual(decoded({ bucket: { dimensions }, algorithm: fixed }).bucket.dimensions, dimensions)
  })
})

describe("RateLimitDefinition validation", () => {
  it.each([
    [{}, [{ path: "algorithm", message: "Missing key" }]],
    [{ algorithm: {} }, [{ path: "algorithm", message: exactlyOne }]],
    [
      { algorithm: { ...fixed, token_bucket: { capacity: 1, refill_rate: 1 } } },
      [{ path: "algorithm", message: exactlyOne }]
    ],
    [{ algorithm: { leaky_bucket: {} } }, [{ path: "algorithm.leaky_bucket", message: "Expected no excess property" }]]
  ])("rejects algorithm of %j", (input, expected) => {
    assert.deepStrictEqual(problems(input), expected)
  })

  it.each([
    [{ window: "0s", limit: 1 }, "fixed_window.window", "must be greater than zero"],
    [{ window: "999ms", limit: 1 }, "fixed_window.window", "must be between 1s and 31d"],
    [{ window: "31d1ms", limit: 1 }, "fixed_window.window", "must be between 1s and 31d"],
    [
      { window: "1 m", limit: 1 },
      "fixed_window.window",
      "must be a duration such as 500ms, 30s, 1m or 1h30m (units d, h, m, s, ms; largest first)"
    ],
    [{ window: 60, limit: 1 }, "fixed_window.window", "Expected string"],
    [{ window: "1m", limit: 0 }, "fixed_window.limit", "must be an integer of at least 1"],
    [{ window: "1m", limit: 1.5 }, "fixed_window.limit", "Expected an integer"],
    [{ window: "1m", limit: "10" }, "fixed_window.limit", "Expected number"],
    [{ window: "1m" }, "fixed_window.limit", "Missing key"]
  ])("rejects fixed_window %j at %s", (fixedWindow, path, message) => {
    assert.deepStrictEqual(problems({ algorithm: { fixed_window: fixedWindow } }), [
      { path: `algorithm.${path}`, message }
    ])
  })

  it("rejects a sliding_window mode outside log and counter", () => {
    assert.deepStrictEqual(problems({ algorithm: { sliding_window: { window: "1m", limit: 5, mode: "exact" } } }), [
      { path: "algorithm.sliding_window.mode", message: 'Expected "log" | "counter"' }
    ])
    assert.deepStrictEqual(problems({ algorithm: { sliding_window: { window: "1m", limit: 5 } } }), [
      { path: "algorithm.sliding_window.mode", message: "Missing key" }
    ])
  })

  it.each([
    [{ capacity: 0, refill_rate: 1 }, "token_bucket.capacity", "must be an integer of at least 1"],
    [{ capacity: 2.5, refill_rate: 1 }, "token_bucket.capacity", "Expected an integer"],
    [{ capacity: 1, refill_rate: 0 }, "token_bucket.refill_rate", "must be greater than 0"],
    [{ capacity: 1, refill_rate: -0.5 }, "token_bucket.refill_rate", "must be greater than 0"],
    [{ capacity: 1, refill_rate: Number.POSITIVE_INFINITY }, "token_bucket.refill_rate", "Expected a finite number"]
  ])("rejects token_bucket %j at %s", (tokenBucket, path, message) => {
    assert.deepStrictEqual(problems({ algorithm: { token_bucket: tokenBucket } }), [
      { path: `algorithm.${path}`, message }
    ])
  })

  it("rejects an explicit empty request_types (spec 7) and duplicates", () => {
    assert.deepStrictEqual(problems(withSelector({ request_types: [] })), [
      {
        path: "selector.request_types",
        message: "must not be empty; omit request_types for the default [proxy, probe]"
      }
    ])
    assert.deepStrictEqual(problems(withSelector({ request_types: ["proxy", "probe", "proxy"] })), [
      { path: "selector.request_types.2", message: "must not repeat a value" }
    ])
    assert.deepStrictEqual(problems(withSelector({ request_types: ["webhook"] })), [
      {
        path: "selector.request_types.0",
        message:
          'Expected "proxy" | "probe" | "oauth2_token_exchange" | "oauth2_refresh" | "oauth2_revoke" | "oauth2_client_credentials"'
      }
    ])
  })

  it("rejects bad methods", () => {
    assert.deepStrictEqual(problems(withSelector({ methods: [] })), [
      { path: "selector.methods", message: "must not be empty; omit methods to match any method" }
    ])
    assert.deepStrictEqual(problems(withSelector({ methods: ["GET", "get", "PATCH-X"] })), [
      { path: "selector.methods.1", message: "must be an upper-case HTTP method such as GET or POST" },
      { path: "selector.methods.2", message: "must be an upper-case HTTP method such as GET or POST" }
    ])
    assert.deepStrictEqual(problems(withSelector({ methods: ["GET", "POST", "GET"] })), [
      { path: "selector.methods.2", message: "must not repeat a value" }
    ])
  })

  it("rejects bad path_match values at selector.path_match.value", () => {
    const at = (value: unknown, kind = "regex") => problems(withSelector({ path_match: { kind, value } }))
    assert.deepStrictEqual(at("v1/users", "prefix"), [
      { path: "selector.path_match.value", message: "a prefix or glob value must start with /" }
    ])
    assert.deepStrictEqual(at("*/users", "glob"), [
      { path: "selector.path_match.value", message: "a prefix or glob value must start with /" }
    ])
    assert.deepStrictEqual(at("^/users/(", "regex"), [
      {
        path: "selector.path_match.value",
        message: "must be a valid regular expression: error parsing regexp: missing closing ): `^/users/(`"
      }
    ])
    // What JavaScript accepts but RE2 (the matcher's linear-time engine) cannot run is refused too.
    for (const value of ["^/v1/(?=users)", "^/(a)\\1$"]) {
      assert.deepStrictEqual(
        at(value, "regex").map((problem) => problem.path),
        ["selector.path_match.value"],
        value
      )
    }
    assert.deepStrictEqual(at("", "prefix"), [{ path: "selector.path_match.value", message: "must not be empty" }])
    assert.deepStrictEqual(at(`/${"a".repeat(1024)}`, "prefix"), [
      { path: "selector.path_match.value", message: "must be at most 1024 characters" }
    ])
    assert.deepStrictEqual(problems(withSelector({ path_match: { kind: "exact", value: "/x" } })), [
      { path: "selector.path_match.kind", message: 'Expected "prefix" | "glob" | "regex"' }
    ])
    assert.deepStrictEqual(at("users/\\d+$", "regex"), [])
  })

  it("rejects bad bucket dimensions", () => {
    assert.deepStrictEqual(
      problems({ bucket: { dimensions: ["actor", "labels/", "user", "actor"] }, algorithm: fixed }),
      [
        { path: "bucket.dimensions.1", message: dimensionMessage },
        { path: "bucket.dimensions.2", message: dimensionMessage }
      ]
    )
    assert.deepStrictEqual(problems({ bucket: { dimensions: ["labels/env", "labels/env"] }, algorithm: fixed }), [
      { path: "bucket.dimensions.1", message: "must not repeat a value" }
    ])
  })

  it("rejects an unknown mode and unknown keys at every level", () => {
    assert.deepStrictEqual(
      problems({
        mode: "shadow",
        priority: 1,
        selector: { paths: ["/x"] },
        bucket: { key: "actor" },
        algorithm: { token_bucket: { capacity: 1, refill_rate: 1, burst: 2 } }
      }),
      [
        { path: "priority", message: "Expected no excess property" },
        { path: "mode", message: 'Expected "enforce" | "observe"' },
        { path: "selector.paths", message: "Expected no excess property" },
        { path: "bucket.key", message: "Expected no excess property" },
        { path: "algorithm.token_bucket.burst", message: "Expected no excess property" }
      ]
    )
  })

  it("validates label_selector with the injected validator", () => {
    const schema = makeRateLimitDefinition({
      validateLabelSelector: (text) => (text.includes(" ") ? "clause 1: spaces are not allowed" : undefined)
    })
    assert.deepStrictEqual(problems(withSelector({ label_selector: "env = prod" }), schema), [
      { path: "selector.label_selector", message: "clause 1: spaces are not allowed" }
    ])
    assert.deepStrictEqual(problems(withSelector({ label_selector: "env=prod" }), schema), [])
    assert.deepStrictEqual(problems(withSelector({ label_selector: "" }), schema), [
      { path: "selector.label_selector", message: "must not be empty; omit label_selector to match any labels" }
    ])
    assert.deepStrictEqual(problems(withSelector({ label_selector: "env = prod" })), [])
  })

  it("never throws on arbitrary JSON", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.jsonValue(),
          fc.record(
            { algorithm: fc.jsonValue(), selector: fc.jsonValue(), bucket: fc.jsonValue() },
            { requiredKeys: [] }
          )
        ),
        (input) => {
          const exit = Schema.decodeUnknownExit(RateLimitDefinition)(input, definitionParseOptions)
          assert.isTrue(Exit.isExit(exit))
        }
      ),
      { numRuns: 1_000 }
    )
  })
})

describe("compilePathMatch", () => {
  const matcher = (kind: PathMatch["kind"], value: string) => compilePathMatch({ kind, value })

  it("prefix is a plain string prefix", () => {
    const match = matcher("prefix", "/v1/users")
    assert.deepStrictEqual(["/v1/users", "/v1/users/7", "/v1/usersx", "/v1/user", "/v2/users"].map(match), [
      true,
      true,
      true,
      false,
      false
    ])
  })

  it("glob matches whole paths, * and ? never cross /", () => {
    const match = matcher("glob", "/v1/*/repos/?")
    assert.deepStrictEqual(
      [
        "/v1/acme/repos/x",
        "/v1//repos/x",
        "/v1/a/b/repos/x",
        "/v1/acme/repos/xy",
        "/v1/acme/repos/",
        "/v1/acme/repos/x/"
      ].map(match),
      [true, true, false, false, false, false]
    )
    assert.deepStrictEqual(["/a.b", "/axb", "/a.b/c"].map(matcher("glob", "/a.b")), [true, false, false])
    assert.deepStrictEqual(["/x", "/x/y"].map(matcher("glob", "/**")), [true, false])
    assert.deepStrictEqual(["/a*b", "/ab", "/a/b"].map(matcher("glob", "/a*b")), [true, true, false])
    assert.deepStrictEqual(["/é", "/ab"].map(matcher("glob", "/?")), [true, false])
  })

  it("regex is an unanchored RE2 search", () => {
    const match = matcher("regex", "^/v1/users/\\d+$")
    assert.deepStrictEqual(["/v1/users/42", "/v1/users/x", "/api/v1/users/42"].map(match), [true, false, false])
    assert.isTrue(matcher("regex", "users")("/api/users/1"))
    assert.throws(() => matcher("regex", "("))
  })

  const segmentChar = fc.constantFrom("a", "b", ".", "*", "?")
  const glob = fc
    .array(
      fc.array(segmentChar, { maxLength: 5 }).map((chars) => chars.join("")),
      { minLength: 1, maxLength: 4 }
    )
    .map((segments) => `/${segments.join("/")}`)
  const path = fc
    .array(fc.constantFrom("a", "b", ".", "/", "*"), { maxLength: 14 })
    .map((chars) => `/${chars.join("")}`)

  it("glob agrees with a [^/]* reference and never lets * match /", () => {
    fc.assert(
      fc.property(glob, path, (pattern, candidate) => {
        const reference = new RegExp(
          `^${Array.from(pattern, (char) => (char === "*" ? "[^/]*" : char === "?" ? "[^/]" : char.replace(/[./]/, "\\$&"))).join("")}$`
        )
        const matched = matcher("glob", pattern)(candidate)
        assert.strictEqual(matched, reference.test(candidate))
        if (matched) assert.strictEqual(candidate.split("/").length, pattern.split("/").length)
      }),
      { numRuns: 3_000 }
    )
  })

  it("a glob segment of stars never matches a path with more segments", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.stringMatching(/^[a-z]*$/), { minLength: 2 }),
        (stars, parts) => {
          assert.isFalse(matcher("glob", `/${"*".repeat(stars)}`)(`/${parts.join("/")}`))
        }
      )
    )
  })
})
