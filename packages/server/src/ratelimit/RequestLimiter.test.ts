/**
 * The limiter's own decisions (spec 2.9, 4.6 rules 2, 5, 8; ARCHITECTURE "request path" step 5)
 * on the in-memory stores and the real rule matcher, with the `Connection` entity replaced by a
 * recorder: an upstream 429 cools the connection down in this process at once and is reported
 * once (429s to requests already in flight are not counted again), a cool-down this process knows
 * needs no store round trip, the recovery is reported once and only for a request sent after the
 * cool-down, a disabled limiter keeps nothing, the longest enforce retry-after wins, and a store
 * failure lets requests through with one warning a minute and a metric per failure.
 */
import { assert, describe, it } from "@effect/vitest"
import { type CoolDownPolicy, defaultCoolDownPolicy } from "@svc/domain/CoolDown"
import { compileRule, indexRules, matchingRules, type RateLimitRequest } from "@svc/domain/RateLimitMatch"
import { Definition } from "@svc/domain/RateLimit"
import { Duration, Effect, Layer, Logger, Metric, Option, Result, Schema } from "effect"
import { TestClock } from "effect/testing"
import { CoolDownStore } from "../stores/CoolDownStore.ts"
import { StoreUnavailable } from "../stores/CounterStore.ts"
import { RateLimitStore } from "../stores/RateLimitStore.ts"
import { CoolDownReports, type Upstream429 } from "./CoolDownReports.ts"
import { RequestLimiter, storeFailures, type UpstreamAnswer } from "./RequestLimiter.ts"
import { RuleCache } from "./RuleCache.ts"

const T = 1_700_000_000_000

const request = (connectionId = "cxn_a"): RateLimitRequest => ({
  namespace: "root.team",
  labels: {},
  method: "GET",
  path: "/v1/items",
  requestType: "proxy",
  connectionId,
  connectorId: "cxr_a",
  connectorVersion: 1
})

/** A rule cache over fixed rules, matched by the real matcher. */
const rulesLayer = (rules: ReadonlyArray<{ readonly id: string; readonly definition: unknown }>) => {
  const compiled = rules.map((rule) => {
    const result = compileRule({
      id: rule.id,
      namespace: "root",
      definition: Schema.decodeUnknownSync(Definition)(rule.definition)
    })
    if (Result.isFailure(result)) throw new Error(result.failure)
    return result.success
  })
  const index = indexRules(compiled)
  return Layer.succeed(RuleCache)({
    matching: (req, onError) => matchingRules(index, req, onError),
    snapshot: () => ({ rules: compiled, skipped: [], index, generation: 1, loadedAt: T }),
    reload: Effect.succeed(true)
  })
}

/** What the entity was told, and the end it answers 429 reports with. */
const told: Array<string> = []
const reportsLayer = (entityEnd: (report: Upstream429) => number | undefined) =>
  Layer.succeed(CoolDownReports)({
    upstream429: (id, report) =>
      Effect.sync(() => {
        told.push(`429:${id}:${report.retryAfterMs ?? "none"}`)
        return Option.fromNullishOr(entityEnd(report))
      }),
    success: (id) =>
      Effect.sync(() => {
        told.push(`success:${id}`)
      })
  })

/** The memory store, counting its checks. */
let storeChecks = 0
const countingStore = Layer.effect(
  RateLimitStore,
  Effect.map(RateLimitStore, (store) =>
    RateLimitStore.of({
      check: (req) =>
        Effect.suspend(() => {
          storeChecks++
          return store.check(req)
        })
    })
  )
).pipe(Layer.provide(RateLimitStore.layerMemory), Layer.provide(CoolDownStore.layerMemory))

const limiterWith = (
  rules: ReadonlyArray<{ readonly id: string; readonly definition: unknown }>,
  store: Layer.Layer<RateLimitStore> = countingStore,
  entityEnd: (report: Upstream429) => number | undefined = (report) => report.observedAt + (report.retryAfterMs ?? 0)
) => RequestLimiter.layerNoDeps.pipe(Layer.provide(Layer.mergeAll(rulesLayer(rules), store, reportsLayer(entityEnd))))

const answer = (status: number, startedAt: number, headers: Record<string, string> = {}, policy?: CoolDownPolicy) =>
  ({
    connectionId: "cxn_a",
    policy: policy ?? defaultCoolDownPolicy,
    startedAt,
    status,
    headers
  }) satisfies UpstreamAnswer

/** Lets the detached reports run. */
const settle = Effect.andThen(Effect.yieldNow, Effect.yieldNow)

describe("RequestLimiter", () => {
  it.effect("an upstream 429 cools down at once, is reported once; a known cool-down needs no round trip", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T)
      told.length = 0
      storeChecks = 0
      const limiter = yield* RequestLimiter
      assert.isUndefined((yield* limiter.check(request())).rejection)
      assert.strictEqual(storeChecks, 1)

      yield* limiter.upstreamAnswered(answer(429, T, { "retry-after": "10" }))
      yield* settle
      assert.deepStrictEqual(told, ["429:cxn_a:10000"])
      const cooled = yield* limiter.check(request())
      assert.deepStrictEqual(cooled.rejection, {
        source: "connector_rate_limiter",
        ruleId: null,
        retryAfterSeconds: 10
      })
      assert.strictEqual(storeChecks, 1, "no round trip for a cool-down this process holds")
      // Other connections are untouched.
      assert.isUndefined((yield* limiter.check(request("cxn_b"))).rejection)

      // 429s to requests already in flight do not count again; a longer wait does.
      yield* limiter.upstreamAnswered(answer(429, T, { "retry-after": "10" }))
      yield* limiter.upstreamAnswered(answer(429, T, {}))
      yield* settle
      assert.deepStrictEqual(told, ["429:cxn_a:10000"])
      yield* limiter.upstreamAnswered(answer(429, T, { "retry-after": "60" }))
      yield* settle
      assert.deepStrictEqual(told, ["429:cxn_a:10000", "429:cxn_a:60000"])
      assert.strictEqual((yield* limiter.check(request())).rejection?.retryAfterSeconds, 60)

      yield* TestClock.adjust(Duration.seconds(59))
      assert.strictEqual((yield* limiter.check(request())).rejection?.retryAfterSeconds, 1)
      yield* TestClock.adjust(Duration.seconds(1))
      assert.isUndefined((yield* limiter.check(request())).rejection)
    }).pipe(Effect.provide(limiterWith([])))
  )

  it.effect("the entity's longer end (its backoff) replaces the provisional one", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T)
      told.length = 0
      const limiter = yield* RequestLimiter
      // No Retry-After: provisionally the default 60 s; the entity answers 5 minutes.
      yield* limiter.upstreamAnswered(answer(429, T))
      yield* settle
      assert.deepStrictEqual(told, ["429:cxn_a:none"])
      assert.strictEqual((yield* limiter.check(request())).rejection?.retryAfterSeconds, 300)
    }).pipe(Effect.provide(limiterWith([], countingStore, (report) => report.observedAt + 300_000)))
  )

  it.effect("recovery is reported once, only for a request sent after the cool-down ended", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T)
      told.length = 0
      const limiter = yield* RequestLimiter
      yield* limiter.upstreamAnswered(answer(200, T))
      yield* limiter.upstreamAnswered(answer(429, T, { "retry-after": "5" }))
      // An answer to a request sent before the cool-down ended says nothing about recovery.
      yield* limiter.upstreamAnswered(answer(200, T))
      yield* TestClock.adjust(Duration.seconds(5))
      yield* limiter.upstreamAnswered(answer(200, T + 5_000))
      yield* limiter.upstreamAnswered(answer(500, T + 5_000))
      yield* settle
      assert.deepStrictEqual(told, ["429:cxn_a:5000", "success:cxn_a"])
    }).pipe(Effect.provide(limiterWith([])))
  )

  it.effect("a disabled limiter keeps no cool-down and tells nobody", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T)
      told.length = 0
      const limiter = yield* RequestLimiter
      const disabled = { ...defaultCoolDownPolicy, disabled: true }
      yield* limiter.upstreamAnswered(answer(429, T, { "retry-after": "10" }, disabled))
      yield* settle
      assert.deepStrictEqual(told, [])
      assert.isUndefined((yield* limiter.check(request())).rejection)
    }).pipe(Effect.provide(limiterWith([])))
  )

  it.effect("of several rejecting enforce rules the longest retry-after is reported; a rule beats a cool-down", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T)
      const limiter = yield* RequestLimiter
      assert.isUndefined((yield* limiter.check(request())).rejection)
      yield* limiter.upstreamAnswered(answer(429, T, { "retry-after": "10" }))
      const outcome = yield* limiter.check(request())
      assert.deepStrictEqual(outcome.rejection, { source: "rate_limit", ruleId: "rl_hour", retryAfterSeconds: 3_600 })
      assert.strictEqual(outcome.rateLimit?.rate_limit_id, "rl_hour")
      assert.deepStrictEqual(
        outcome.rateLimit?.rate_limit_matched?.map((match) => match.id),
        ["rl_minute", "rl_hour", "rl_watch"]
      )
    }).pipe(
      Effect.provide(
        limiterWith([
          {
            id: "rl_minute",
            definition: {
              selector: {},
              bucket: { dimensions: [] },
              algorithm: { sliding_window: { window: "1m", limit: 1, mode: "log" } }
            }
          },
          {
            id: "rl_hour",
            definition: {
              selector: {},
              bucket: { dimensions: ["connection"] },
              algorithm: { sliding_window: { window: "1h", limit: 1, mode: "log" } }
            }
          },
          {
            id: "rl_watch",
            definition: {
              mode: "observe",
              selector: {},
              bucket: { dimensions: [] },
              algorithm: { sliding_window: { window: "1d", limit: 1, mode: "log" } }
            }
          }
        ])
      )
    )
  )

  it.effect("a failing store lets requests through: one warning a minute, a metric per failure", () => {
    const lines: Array<string> = []
    const capture = Logger.layer([Logger.map(Logger.formatJson, (line) => lines.push(line))])
    const failing = Layer.succeed(RateLimitStore)({
      check: () => Effect.fail(new StoreUnavailable({ operation: "rateLimit.check", cause: new Error("down") }))
    })
    return Effect.gen(function* () {
      yield* TestClock.setTime(T)
      const limiter = yield* RequestLimiter
      const before = (yield* Metric.value(storeFailures)).count
      for (let i = 0; i < 50; i++) {
        const outcome = yield* limiter.check(request())
        assert.isUndefined(outcome.rejection)
        assert.deepStrictEqual(
          outcome.rateLimit?.rate_limit_matched?.map((match) => match.id),
          ["rl_any"]
        )
      }
      yield* TestClock.adjust(Duration.minutes(1))
      yield* limiter.check(request())
      const warnings = lines.filter((line) => line.includes("fail-open"))
      assert.strictEqual(warnings.length, 2, lines.join("\n"))
      assert.strictEqual((yield* Metric.value(storeFailures)).count - before, 51)
      // A cool-down this process holds still applies while the store is down.
      yield* limiter.upstreamAnswered(answer(429, T, { "retry-after": "10" }))
      assert.strictEqual((yield* limiter.check(request())).rejection?.source, "connector_rate_limiter")
    }).pipe(
      Effect.provide(
        limiterWith(
          [
            {
              id: "rl_any",
              definition: {
                selector: {},
                bucket: { dimensions: [] },
                algorithm: { fixed_window: { window: "1m", limit: 1 } }
              }
            }
          ],
          failing
        )
      ),
      Effect.provide(capture)
    )
  })
})
