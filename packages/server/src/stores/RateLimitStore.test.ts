import { randomUUID } from "node:crypto"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { algorithmParams } from "@svc/domain/RateLimitAlgorithm"
import type { Algorithm, RateLimitMode } from "@svc/domain/RateLimitDefinition"
import { Effect, Exit, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { Redis } from "ioredis"
import { CoolDownStore, coolDownKey } from "./CoolDownStore.ts"
import { connectRedis, type RedisNode, StoreUnavailable } from "./CounterStore.ts"
import {
  makeRedisRateLimitStore,
  type RateLimitDecision,
  type RateLimitRuleCheck,
  RateLimitStore,
  ruleStateKey
} from "./RateLimitStore.ts"
import { type RedisCluster, startRedisCluster } from "./testing/RedisCluster.ts"

const redisUrl = "redis://127.0.0.1:6379"
const uniqueRedisPrefix = (): string => `svc-test:${randomUUID()}:`

/** A whole hour, so windows of 1s…1h start at T0. */
const T0 = 1_800_000_000_000

const fixed = (window: string, limit: number): Algorithm => ({ fixed_window: { window, limit } })
const slidingLog = (window: string, limit: number): Algorithm => ({
  sliding_window: { window, limit, mode: "log" }
})
const slidingCounter = (window: string, limit: number): Algorithm => ({
  sliding_window: { window, limit, mode: "counter" }
})
const bucket = (capacity: number, refill_rate: number): Algorithm => ({
  token_bucket: { capacity, refill_rate }
})
const rule = (ruleId: string, algorithm: Algorithm, mode: RateLimitMode = "enforce", bucketKey = "b") =>
  ({ ruleId, mode, bucketKey, algorithm }) satisfies RateLimitRuleCheck

/** `ok <remaining>` or `no <retry>s <remaining>` per rule. */
const verdicts = (decision: RateLimitDecision): ReadonlyArray<string> =>
  decision.results.map((r) => (r.allowed ? `ok ${r.remaining}` : `no ${r.retryAfterSeconds}s ${r.remaining}`))

type Stores = RateLimitStore | CoolDownStore

/** A private three-master Redis Cluster for the `redis-cluster` backend. */
let cluster: RedisCluster | undefined
beforeAll(async () => {
  cluster = await startRedisCluster({ replicas: 0 })
}, 60_000)
afterAll(() => cluster?.stop(), 30_000)

const clusterNodes = (): ReadonlyArray<RedisNode> =>
  cluster!.nodes.map((node) => ({ host: "127.0.0.1", port: node.port }))

const backends: ReadonlyArray<{ readonly name: string; readonly layer: () => Layer.Layer<Stores, StoreUnavailable> }> =
  [
    { name: "memory", layer: () => RateLimitStore.layerMemory.pipe(Layer.provideMerge(CoolDownStore.layerMemory)) },
    {
      name: "redis",
      layer: () => {
        const keyPrefix = uniqueRedisPrefix()
        return Layer.merge(
          RateLimitStore.layerRedis({ url: redisUrl, keyPrefix, clock: "effect" }),
          CoolDownStore.layerRedis({ url: redisUrl, keyPrefix })
        )
      }
    },
    {
      name: "redis-cluster",
      layer: () => {
        const redis = { url: "redis://", nodes: clusterNodes(), keyPrefix: uniqueRedisPrefix() }
        return Layer.merge(RateLimitStore.layerRedis({ ...redis, clock: "effect" }), CoolDownStore.layerRedis(redis))
      }
    }
  ]

const at = (ms: number) => TestClock.setTime(T0 + ms)

for (const backend of backends) {
  describe(`RateLimitStore conformance: ${backend.name}`, () => {
    const test = (
      name: string,
      body: (store: RateLimitStore["Service"]) => Effect.Effect<void, StoreUnavailable, Stores>
    ) =>
      it.effect(name, () =>
        Effect.gen(function* () {
          yield* at(0)
          yield* body(yield* RateLimitStore)
        }).pipe(Effect.provide(backend.layer()))
      )
    const check = (store: RateLimitStore["Service"], ...rules: ReadonlyArray<RateLimitRuleCheck>) =>
      Effect.map(store.check({ connectionId: "cxn_a", rules }), verdicts)

    test("fixed_window: resets at floor(now / window) boundaries; Retry-After is the window remainder", (store) =>
      Effect.gen(function* () {
        const r = rule("rl_f", fixed("10s", 2))
        yield* at(3_000)
        assert.deepStrictEqual(yield* check(store, r), ["ok 1"])
        assert.deepStrictEqual(yield* check(store, r), ["ok 0"])
        assert.deepStrictEqual(yield* check(store, r), ["no 7s 0"])
        yield* at(9_999)
        assert.deepStrictEqual(yield* check(store, r), ["no 1s 0"])
        yield* at(10_000)
        assert.deepStrictEqual(yield* check(store, r), ["ok 1"])
        yield* at(19_500)
        assert.deepStrictEqual(yield* check(store, r), ["ok 0"])
        yield* at(20_001)
        assert.deepStrictEqual(yield* check(store, r), ["ok 1"])
      }))

    test("sliding_window log: at most limit in any rolling window; Retry-After until the blocking entry leaves", (store) =>
      Effect.gen(function* () {
        const r = rule("rl_l", slidingLog("10s", 2))
        assert.deepStrictEqual(yield* check(store, r), ["ok 1"])
        yield* at(4_000)
        assert.deepStrictEqual(yield* check(store, r), ["ok 0"])
        yield* at(6_000)
        assert.deepStrictEqual(yield* check(store, r), ["no 4s 0"])
        yield* at(9_999)
        assert.deepStrictEqual(yield* check(store, r), ["no 1s 0"])
        yield* at(10_000)
        assert.deepStrictEqual(yield* check(store, r), ["ok 0"])
        assert.deepStrictEqual(yield* check(store, r), ["no 4s 0"])
      }))

    test("sliding_window log with a large limit: entries leave as the window passes, in order", (store) =>
      Effect.gen(function* () {
        const r = rule("rl_big", slidingLog("1s", 300))
        for (let i = 0; i < 300; i++) {
          yield* at(i)
          assert.deepStrictEqual(yield* check(store, r), [`ok ${299 - i}`])
        }
        yield* at(300)
        // the blocking entry (t=0) leaves at t=1000
        assert.deepStrictEqual(yield* check(store, r), ["no 1s 0"])
        yield* at(1_000)
        assert.deepStrictEqual(yield* check(store, r), ["ok 0"])
        yield* at(1_150)
        // t=1…150 left; t=151…299 and t=1000 remain
        assert.deepStrictEqual(yield* check(store, r), [`ok ${300 - 149 - 1 - 1}`])
        yield* at(2_500)
        assert.deepStrictEqual(yield* check(store, r), ["ok 299"])
      }))

    test("sliding_window counter: current + floor(previous × (window − elapsed) / window)", (store) =>
      Effect.gen(function* () {
        const r = rule("rl_c", slidingCounter("10s", 3))
        yield* at(1_000)
        assert.deepStrictEqual(yield* check(store, r), ["ok 2"])
        assert.deepStrictEqual(yield* check(store, r), ["ok 1"])
        assert.deepStrictEqual(yield* check(store, r), ["ok 0"])
        // current 3 >= limit: next window, where floor(3 × (10000 − e) / 10000) < 3 from e = 1 ms
        assert.deepStrictEqual(yield* check(store, r), ["no 10s 0"])
        yield* at(10_000)
        assert.deepStrictEqual(yield* check(store, r), ["no 1s 0"])
        yield* at(11_000)
        // floor(3 × 9000 / 10000) = 2: admitted, then 1 + 2 = 3
        assert.deepStrictEqual(yield* check(store, r), ["ok 0"])
        // 1 + floor(3 × (10000 − e) / 10000) < 3 from e = 3334: 2334 ms → 3 s
        assert.deepStrictEqual(yield* check(store, r), ["no 3s 0"])
        yield* at(13_333)
        assert.deepStrictEqual(yield* check(store, r), ["no 1s 0"])
        yield* at(13_334)
        assert.deepStrictEqual(yield* check(store, r), ["ok 0"])
        yield* at(30_000)
        assert.deepStrictEqual(yield* check(store, r), ["ok 2"])
      }))

    test("token_bucket: new buckets are full, fractional refill, Retry-After is the time to the next token", (store) =>
      Effect.gen(function* () {
        const r = rule("rl_t", bucket(2, 0.5))
        assert.deepStrictEqual(yield* check(store, r), ["ok 1"])
        assert.deepStrictEqual(yield* check(store, r), ["ok 0"])
        assert.deepStrictEqual(yield* check(store, r), ["no 2s 0"])
        yield* at(1_000)
        assert.deepStrictEqual(yield* check(store, r), ["no 1s 0"])
        yield* at(2_000)
        assert.deepStrictEqual(yield* check(store, r), ["ok 0"])
        yield* at(3_600_000)
        assert.deepStrictEqual(yield* check(store, r), ["ok 1"])
        assert.deepStrictEqual(yield* check(store, r), ["ok 0"])
        const slow = rule("rl_s", bucket(1, 0.3))
        assert.deepStrictEqual(yield* check(store, slow), ["ok 0"])
        assert.deepStrictEqual(yield* check(store, slow), ["no 4s 0"])
        yield* at(3_600_000 + 3_333)
        assert.deepStrictEqual(yield* check(store, slow), ["no 1s 0"])
        yield* at(3_600_000 + 3_334)
        assert.deepStrictEqual(yield* check(store, slow), ["ok 0"])
      }))

    test("observe rules never reject and count every match", (store) =>
      Effect.gen(function* () {
        const watch = rule("rl_o", fixed("1m", 1), "observe")
        const d1 = yield* store.check({ connectionId: "cxn_a", rules: [watch] })
        const d2 = yield* store.check({ connectionId: "cxn_a", rules: [watch] })
        assert.isTrue(d1.admitted && d2.admitted)
        assert.deepStrictEqual([...verdicts(d1), ...verdicts(d2)], ["ok 0", "no 60s 0"])
        assert.deepStrictEqual(d2.results[0], {
          ruleId: "rl_o",
          mode: "observe",
          allowed: false,
          retryAfterSeconds: 60,
          remaining: 0
        })
        // the over-limit match was counted: a sliding log keeps both
        const log = rule("rl_ol", slidingLog("10s", 1), "observe")
        yield* check(store, log)
        yield* at(5_000)
        assert.deepStrictEqual(yield* check(store, log), ["no 5s 0"])
        yield* at(10_000)
        assert.deepStrictEqual(yield* check(store, log), ["no 5s 0"])
      }))

    test("evaluate all, then commit: a rejected request consumes from no enforce rule", (store) =>
      Effect.gen(function* () {
        const tight = rule("rl_1", fixed("1m", 1))
        const loose = rule("rl_2", fixed("1m", 3))
        const tokens = rule("rl_3", bucket(3, 0.01))
        const watch = rule("rl_4", slidingCounter("1m", 10), "observe")
        const request = { connectionId: "cxn_a", rules: [tight, loose, tokens, watch] }
        const first = yield* store.check(request)
        assert.isTrue(first.admitted)
        assert.deepStrictEqual(verdicts(first), ["ok 0", "ok 2", "ok 2", "ok 9"])
        for (const watched of [8, 7]) {
          const rejected = yield* store.check(request)
          assert.isFalse(rejected.admitted)
          assert.deepStrictEqual(verdicts(rejected), ["no 60s 0", "ok 2", "ok 2", `ok ${watched}`])
        }
        // without the tight rule the others still hold two each: nothing was taken by the rejections
        const rest = { connectionId: "cxn_a", rules: [loose, tokens] }
        assert.deepStrictEqual(verdicts(yield* store.check(rest)), ["ok 1", "ok 1"])
        assert.deepStrictEqual(verdicts(yield* store.check(rest)), ["ok 0", "ok 0"])
        const last = yield* store.check(rest)
        assert.isFalse(last.admitted)
        assert.deepStrictEqual(verdicts(last), ["no 60s 0", "no 100s 0"])
      }))

    test("every rejecting enforce rule reports its own Retry-After", (store) =>
      Effect.gen(function* () {
        const request = {
          connectionId: "cxn_a",
          rules: [rule("rl_a", fixed("10s", 1)), rule("rl_b", fixed("1m", 1)), rule("rl_c", bucket(1, 0.1))]
        }
        yield* at(2_500)
        assert.isTrue((yield* store.check(request)).admitted)
        const rejected = yield* store.check(request)
        assert.isFalse(rejected.admitted)
        assert.deepStrictEqual(verdicts(rejected), ["no 8s 0", "no 58s 0", "no 10s 0"])
        assert.deepStrictEqual(
          rejected.results.map((r) => r.ruleId),
          ["rl_a", "rl_b", "rl_c"]
        )
      }))

    test("concurrent checks admit exactly the limit", (store) =>
      Effect.gen(function* () {
        const rules = [
          rule("rl_f", fixed("1m", 10)),
          rule("rl_t", bucket(12, 0.01)),
          rule("rl_o", slidingLog("1m", 1), "observe")
        ]
        const decisions = yield* Effect.all(
          Array.from({ length: 40 }, () => store.check({ connectionId: "cxn_a", rules })),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(decisions.filter((d) => d.admitted).length, 10)
        assert.deepStrictEqual(yield* check(store, ...rules), ["no 60s 0", "ok 2", "no 60s 0"])
      }))

    test("each rule and bucket is its own counter", (store) =>
      Effect.gen(function* () {
        const alg = fixed("1m", 1)
        assert.deepStrictEqual(yield* check(store, rule("rl_x", alg, "enforce", "actor=a")), ["ok 0"])
        assert.deepStrictEqual(yield* check(store, rule("rl_x", alg, "enforce", "actor=b")), ["ok 0"])
        assert.deepStrictEqual(yield* check(store, rule("rl_x", alg, "enforce", "")), ["ok 0"])
        assert.deepStrictEqual(yield* check(store, rule("rl_y", alg, "enforce", "actor=a")), ["ok 0"])
        assert.deepStrictEqual(yield* check(store, rule("rl_x", alg, "enforce", "actor=a")), ["no 60s 0"])
        // the bucket is shared across connections
        const other = yield* store.check({ connectionId: "cxn_b", rules: [rule("rl_x", alg, "enforce", "actor=b")] })
        assert.deepStrictEqual(verdicts(other), ["no 60s 0"])
      }))

    test("reads the connection's cool-down in the same call; a cooling request consumes from no enforce rule", (store) =>
      Effect.gen(function* () {
        const coolDowns = yield* CoolDownStore
        const limited = rule("rl_e", fixed("1m", 2))
        const watch = rule("rl_w", fixed("1m", 5), "observe")
        const request = { connectionId: "cxn_a", rules: [limited, watch] }
        const calm = yield* store.check({ connectionId: "cxn_a", rules: [] })
        assert.deepStrictEqual(calm, { now: T0, admitted: true, results: [] })
        yield* coolDowns.publish("cxn_a", T0 + 30_000)
        const cooling = yield* store.check(request)
        assert.deepStrictEqual(cooling.coolDownUntil, T0 + 30_000)
        assert.isFalse(cooling.admitted)
        assert.deepStrictEqual(verdicts(cooling), ["ok 2", "ok 4"])
        const otherConnection = yield* store.check({ connectionId: "cxn_b", rules: [] })
        assert.isUndefined(otherConnection.coolDownUntil)
        assert.isTrue(otherConnection.admitted)
        yield* at(29_999)
        assert.deepStrictEqual((yield* store.check(request)).coolDownUntil, T0 + 30_000)
        yield* at(30_000)
        const after = yield* store.check(request)
        assert.isUndefined(after.coolDownUntil)
        assert.isTrue(after.admitted)
        assert.deepStrictEqual(verdicts(after), ["ok 1", "ok 2"])
        assert.strictEqual(after.now, T0 + 30_000)
      }))
  })
}

describe("RateLimitStore.layerRedis", () => {
  const raw = Effect.acquireRelease(
    Effect.sync(() => new Redis(redisUrl)),
    (client) => Effect.promise(() => client.quit())
  )

  it.live("runs on Redis TIME by default, keeps every key under one hash tag, and lets idle state expire", () =>
    Effect.gen(function* () {
      const keyPrefix = uniqueRedisPrefix()
      const client = yield* raw
      const before = Date.now()
      const decision = yield* Effect.flatMap(RateLimitStore, (store) =>
        store.check({
          connectionId: "cxn_a",
          rules: [
            rule("rl_f", fixed("1m", 5)),
            rule("rl_c", slidingCounter("1m", 5)),
            rule("rl_l", slidingLog("1m", 5)),
            rule("rl_t", bucket(5, 1))
          ]
        })
      ).pipe(Effect.provide(RateLimitStore.layerRedis({ url: redisUrl, keyPrefix })))
      const after = Date.now()
      assert.isTrue(decision.now >= before - 1_000 && decision.now <= after + 1_000, `now ${decision.now}`)
      assert.deepStrictEqual(verdicts(decision), ["ok 4", "ok 4", "ok 4", "ok 4"])
      const keys = (yield* Effect.promise(() => client.keys(`${keyPrefix}*`))).sort()
      assert.strictEqual(keys.length, 4)
      for (const key of keys) {
        assert.isTrue(key.startsWith(`${keyPrefix}rate-limit:{rl}:rl_`), key)
        const ttl = yield* Effect.promise(() => client.pttl(key))
        // windows: at most two windows; bucket: until full again plus a second
        assert.isTrue(ttl > 0 && ttl <= 120_000, `${key} pttl ${ttl}`)
      }
      assert.include(coolDownKey("cxn_a"), "{rl}")
      yield* Effect.promise(() => client.del(...keys))
    })
  )

  it.live("fails with StoreUnavailable, promptly, when Redis is gone (the caller fails open)", () =>
    Effect.gen(function* () {
      const context = yield* Effect.context<never>()
      const client = yield* connectRedis({ url: redisUrl, keyPrefix: uniqueRedisPrefix() }, context)
      const store = makeRedisRateLimitStore(client, "redis")
      assert.isTrue((yield* store.check({ connectionId: "cxn_a", rules: [rule("rl_f", fixed("1m", 1))] })).admitted)
      client.disconnect()
      const error = yield* Effect.flip(store.check({ connectionId: "cxn_a", rules: [rule("rl_f", fixed("1m", 1))] }))
      assert.instanceOf(error, StoreUnavailable)
      assert.strictEqual(error.operation, "rateLimit.check")
    })
  )

  it.live("one check is one Redis command, whatever the number of rules", () =>
    Effect.gen(function* () {
      const context = yield* Effect.context<never>()
      const client = yield* Effect.acquireRelease(
        connectRedis({ url: redisUrl, keyPrefix: uniqueRedisPrefix() }, context),
        (client) => Effect.promise(() => client.quit())
      )
      assert.instanceOf(client, Redis)
      if (!(client instanceof Redis)) return
      const sent: Array<string> = []
      const sendCommand = client.sendCommand.bind(client)
      client.sendCommand = (...args: Parameters<typeof sendCommand>) => {
        sent.push(args[0].name)
        return sendCommand(...args)
      }
      const store = makeRedisRateLimitStore(client, "redis")
      const rules = [
        rule("rl_f", fixed("1m", 50)),
        rule("rl_c", slidingCounter("1m", 50)),
        rule("rl_l", slidingLog("1m", 50), "observe"),
        rule("rl_t", bucket(50, 1))
      ]
      // ioredis turns the first EVALSHA on a connection into an EVAL: still one command
      for (let i = 0; i < 10; i++) {
        sent.length = 0
        yield* store.check({ connectionId: "cxn_a", rules: rules.slice(0, i % 5) })
        assert.deepStrictEqual(sent, ["evalsha"], `check ${i}`)
      }
      sent.length = 0
      const decisions = yield* Effect.all(
        Array.from({ length: 20 }, () => store.check({ connectionId: "cxn_a", rules })),
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(
        sent,
        Array.from({ length: 20 }, () => "evalsha")
      )
      assert.strictEqual(decisions.filter((d) => d.admitted).length, 20)
    })
  )
})

describe("RateLimitStore.layerRedis on a Redis Cluster", () => {
  const calls = (port: number) =>
    Effect.promise(async () => {
      const stats = await cluster!.command(port, "INFO", "commandstats")
      const of = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(stats)?.[1] ?? 0)
      return of("evalsha") + of("eval")
    })
  const allRules = [
    rule("rl_f", fixed("1m", 50)),
    rule("rl_c", slidingCounter("1m", 50)),
    rule("rl_l", slidingLog("1m", 50), "observe"),
    rule("rl_t", bucket(50, 1))
  ]

  it.live("every key one check touches, cool-down included, hashes to the {rl} slot under the key prefix", () =>
    Effect.gen(function* () {
      const slotOf = (key: string) =>
        Effect.promise(() => cluster!.command(cluster!.nodes[0]!.port, "CLUSTER", "KEYSLOT", key))
      const slot = yield* slotOf("rl")
      for (const prefix of ["svc:", "", "tenant-a:svc:", uniqueRedisPrefix()]) {
        const keys = [
          coolDownKey("cxn_a"),
          coolDownKey("-"),
          ...allRules.map((r) => ruleStateKey(r, algorithmParams(r.algorithm)))
        ]
        for (const key of keys) assert.strictEqual(yield* slotOf(prefix + key), slot, prefix + key)
      }
    })
  )

  it.live("one check is one EVALSHA on the master owning the slot, whatever the number of rules counted", () => {
    const keyPrefix = uniqueRedisPrefix()
    return Effect.gen(function* () {
      const store = yield* RateLimitStore
      const owner = yield* Effect.promise(() => cluster!.masterOf(`${keyPrefix}${coolDownKey("cxn_a")}`))
      const masters = cluster!.nodes.map((node) => node.port)
      // the first call on a connection may be EVALSHA then EVAL (NOSCRIPT): warm up
      yield* store.check({ connectionId: "cxn_a", rules: allRules })
      const before = yield* Effect.forEach(masters, calls)
      const decisions = yield* Effect.all(
        // 1 to 4 rules: a check that counts no rule may be answered from the cool-downs pushed to the
        // process, without a round trip (CoolDownFeed.test.ts)
        Array.from({ length: 20 }, (_, i) =>
          store.check({ connectionId: "cxn_a", rules: allRules.slice(0, 1 + (i % 4)) })
        ),
        { concurrency: "unbounded" }
      )
      const after = yield* Effect.forEach(masters, calls)
      assert.strictEqual(decisions.filter((d) => d.admitted).length, 20)
      assert.deepStrictEqual(
        masters.map((_port, i) => after[i]! - before[i]!),
        masters.map((port) => (port === owner ? 20 : 0))
      )
    }).pipe(Effect.provide(RateLimitStore.layerRedis({ url: "redis://", nodes: clusterNodes(), keyPrefix })))
  })

  it.live(
    "the rate-limit slot resharded mid-use: checks fail promptly during the move (ASK, TRYAGAIN), MOVED is followed after it",
    () => {
      const keyPrefix = uniqueRedisPrefix()
      return Effect.gen(function* () {
        const store = yield* RateLimitStore
        const limit = rule("rl_moved", fixed("1h", 5))
        const check = () => Effect.map(store.check({ connectionId: "cxn_m", rules: [limit] }), (d) => d.admitted)
        assert.deepStrictEqual([yield* check(), yield* check()], [true, true])
        const slot = Number(
          yield* Effect.promise(() => cluster!.command(cluster!.nodes[0]!.port, "CLUSTER", "KEYSLOT", "rl"))
        )
        const owner = yield* Effect.promise(() => cluster!.masterOf(`${keyPrefix}${coolDownKey("cxn_m")}`))
        const target = cluster!.nodes.find((node) => node.port !== owner)!.port
        const context = yield* Effect.context<never>()
        const midway: Array<string> = []
        // While the slot is MIGRATING the bucket is on the target already: the old owner answers ASK,
        // the client asks the target, and the target refuses a multi-key script whose keys are not
        // all there yet (the absent cool-down key) with TRYAGAIN: the check fails, within its bound.
        yield* Effect.promise(() =>
          cluster!.migrateSlot(slot, target, async () => {
            for (let i = 0; i < 2; i++) {
              const started = Date.now()
              const exit = await Effect.runPromiseWith(context)(Effect.exit(check()))
              assert.isBelow(Date.now() - started, 2_500)
              const error = Exit.findErrorOption(exit)
              midway.push(Option.isSome(error) ? error.value._tag : "answered")
            }
          })
        )
        assert.strictEqual(midway.length, 2)
        assert.deepStrictEqual(midway, ["StoreUnavailable", "StoreUnavailable"])
        assert.strictEqual(
          yield* Effect.promise(() => cluster!.masterOf(`${keyPrefix}${coolDownKey("cxn_m")}`)),
          target
        )
        const rest = []
        for (let i = 0; i < 5; i++) rest.push(yield* check())
        assert.deepStrictEqual(rest, [true, true, true, false, false])
      }).pipe(Effect.provide(RateLimitStore.layerRedis({ url: "redis://", nodes: clusterNodes(), keyPrefix })))
    }
  )
})
