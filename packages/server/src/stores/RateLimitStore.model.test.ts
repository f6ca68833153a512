/**
 * Differential test: random request sequences through the memory store and the Redis store (both
 * on `TestClock`; the Redis script takes the clock as an argument in tests only) against a plain
 * model that keeps every counted request and answers each algorithm from that history, finding
 * `Retry-After` by search rather than by formula.
 */
import { randomUUID } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import type { Algorithm, RateLimitMode } from "@svc/domain/RateLimitDefinition"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as fc from "fast-check"
import { CoolDownStore } from "./CoolDownStore.ts"
import type { StoreUnavailable } from "./CounterStore.ts"
import { type RateLimitCheck, type RateLimitDecision, RateLimitStore } from "./RateLimitStore.ts"

const redisUrl = "redis://127.0.0.1:6379"

interface ModelRule {
  readonly ruleId: string
  readonly mode: RateLimitMode
  readonly algorithm: Algorithm
}

interface Step {
  readonly advanceMs: number
  /** Publish a cool-down ending this many ms from now before the check (0: none). */
  readonly coolDownMs: number
  readonly matched: ReadonlyArray<boolean>
}

const seconds = fc.constantFrom("1s", "2s", "5s")
const limit = fc.integer({ min: 1, max: 4 })
const algorithm: fc.Arbitrary<Algorithm> = fc.oneof(
  fc.record({ fixed_window: fc.record({ window: seconds, limit }) }),
  fc.record({ sliding_window: fc.record({ window: seconds, limit, mode: fc.constant("log" as const) }) }),
  fc.record({ sliding_window: fc.record({ window: seconds, limit, mode: fc.constant("counter" as const) }) }),
  fc.record({
    token_bucket: fc.record({ capacity: limit, refill_rate: fc.constantFrom(0.25, 0.3, 0.5, 1, 1.7, 3) })
  })
)
interface Scenario {
  readonly start: number
  readonly rules: ReadonlyArray<ModelRule>
  readonly steps: ReadonlyArray<Step>
}

const scenario: fc.Arbitrary<Scenario> = fc
  .array(fc.record({ mode: fc.constantFrom<RateLimitMode>("enforce", "enforce", "observe"), algorithm }), {
    minLength: 1,
    maxLength: 3
  })
  .chain((rules) =>
    fc.record({
      start: fc.integer({ min: 0, max: 10_000 }),
      rules: fc.constant(rules.map((rule, i): ModelRule => ({ ruleId: `rl_${i}`, ...rule }))),
      steps: fc.array(
        fc.record({
          advanceMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 }), fc.integer({ min: 400, max: 6_000 })),
          coolDownMs: fc.oneof({ weight: 9, arbitrary: fc.constant(0) }, fc.integer({ min: 1_000, max: 3_000 })),
          matched: fc.array(fc.boolean(), { minLength: rules.length, maxLength: rules.length })
        }),
        { minLength: 1, maxLength: 40 }
      )
    })
  )

const windowOf = (text: string) => Number(text.slice(0, -1)) * 1000

/** The reference: each rule's counted request times (windows) or bucket state, answered from scratch. */
const makeModel = (rules: ReadonlyArray<ModelRule>) => {
  const counted = rules.map((): Array<number> => [])
  const buckets = rules.map((): { tokens: number; at: number } | undefined => undefined)
  let coolDownUntil: number | undefined

  const inWindow = (times: ReadonlyArray<number>, index: number, w: number) =>
    times.filter((t) => Math.floor(t / w) === index).length
  const counterEstimate = (times: ReadonlyArray<number>, t: number, w: number) => {
    const index = Math.floor(t / w)
    const elapsed = t - index * w
    return inWindow(times, index, w) + Math.floor((inWindow(times, index - 1, w) * (w - elapsed)) / w)
  }
  const logCount = (times: ReadonlyArray<number>, t: number, w: number) => times.filter((x) => t - x < w).length

  /** Allowed, Retry-After and how to count for one rule at `now`. */
  const judge = (i: number, now: number) => {
    const alg = rules[i]!.algorithm
    const times = counted[i]!
    if ("token_bucket" in alg) {
      const { capacity, refill_rate } = alg.token_bucket
      const state = buckets[i]
      const tokens =
        state === undefined ? capacity : Math.min(capacity, state.tokens + ((now - state.at) * refill_rate) / 1000)
      return {
        allowed: tokens >= 1,
        retry: Math.max(1, Math.ceil((1 - tokens) / refill_rate)),
        remaining: (consumed: boolean) => {
          if (consumed && tokens >= 1) buckets[i] = { tokens: tokens - 1, at: now }
          return Math.max(0, Math.floor(consumed && tokens >= 1 ? tokens - 1 : tokens))
        }
      }
    }
    const { limit, window } = "fixed_window" in alg ? alg.fixed_window : alg.sliding_window
    const w = windowOf(window)
    const count: (t: number) => number =
      "fixed_window" in alg
        ? (t) => inWindow(times, Math.floor(t / w), w)
        : alg.sliding_window.mode === "log"
          ? (t) => logCount(times, t, w)
          : (t) => counterEstimate(times, t, w)
    const allowed = count(now) < limit
    // with nothing counted meanwhile a window only drains, so the first whole second that admits is Retry-After
    let seconds = 1
    while (!allowed && count(now + seconds * 1000) >= limit) seconds++
    return {
      allowed,
      retry: seconds,
      remaining: (consumed: boolean) => {
        if (consumed) times.push(now)
        return Math.max(0, limit - count(now))
      }
    }
  }

  return {
    coolDown: (until: number) => {
      coolDownUntil = until
    },
    check: (now: number, matched: ReadonlyArray<number>): RateLimitDecision => {
      const cooling = coolDownUntil !== undefined && coolDownUntil > now
      const judged = matched.map((i) => judge(i, now))
      const admitted = !cooling && matched.every((i, j) => rules[i]!.mode === "observe" || judged[j]!.allowed)
      return {
        now,
        ...(cooling ? { coolDownUntil: coolDownUntil! } : {}),
        admitted,
        results: matched.map((i, j) => {
          const { allowed, remaining, retry } = judged[j]!
          const left = remaining(admitted || rules[i]!.mode === "observe")
          return {
            ruleId: rules[i]!.ruleId,
            mode: rules[i]!.mode,
            allowed,
            ...(allowed ? {} : { retryAfterSeconds: retry }),
            remaining: left
          }
        })
      }
    }
  }
}

type Stores = RateLimitStore | CoolDownStore

const run = (layer: Layer.Layer<Stores, StoreUnavailable>, value: Scenario) =>
  Effect.gen(function* () {
    const store = yield* RateLimitStore
    const coolDowns = yield* CoolDownStore
    const model = makeModel(value.rules)
    const bucketKey = randomUUID()
    let now = 1_800_000_000_000 + value.start
    yield* TestClock.setTime(now)
    for (const [n, step] of value.steps.entries()) {
      now += step.advanceMs
      yield* TestClock.setTime(now)
      if (step.coolDownMs > 0) {
        yield* coolDowns.publish("cxn_a", now + step.coolDownMs)
        model.coolDown(now + step.coolDownMs)
      }
      const matched = value.rules.flatMap((_, i) => (step.matched[i] ? [i] : []))
      const request: RateLimitCheck = {
        connectionId: "cxn_a",
        rules: matched.map((i) => ({ ...value.rules[i]!, bucketKey }))
      }
      const actual = yield* store.check(request)
      assert.deepStrictEqual(actual, model.check(now, matched), `step ${n}`)
    }
  }).pipe(Effect.provide(layer), Effect.provide(TestClock.layer()))

const backends: ReadonlyArray<{ readonly name: string; readonly layer: () => Layer.Layer<Stores, StoreUnavailable> }> =
  [
    { name: "memory", layer: () => RateLimitStore.layerMemory.pipe(Layer.provideMerge(CoolDownStore.layerMemory)) },
    {
      name: "redis",
      layer: () => {
        const keyPrefix = `svc-test:${randomUUID()}:`
        return Layer.merge(
          RateLimitStore.layerRedis({ url: redisUrl, keyPrefix, clock: "effect" }),
          CoolDownStore.layerRedis({ url: redisUrl, keyPrefix })
        )
      }
    }
  ]

describe("RateLimitStore against the reference model", () => {
  for (const backend of backends) {
    it(`${backend.name} answers every step as the model does`, { timeout: 120_000 }, async () => {
      await fc.assert(
        fc.asyncProperty(scenario, (value) => Effect.runPromise(run(backend.layer(), value))),
        { numRuns: backend.name === "memory" ? 300 : 100 }
      )
    })
  }
})
