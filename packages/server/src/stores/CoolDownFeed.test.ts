import { randomUUID } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { Redis } from "ioredis"
import { coolDownMessage, KnownCoolDowns, subscribeCoolDowns } from "./CoolDownFeed.ts"
import { CoolDownStore } from "./CoolDownStore.ts"
import { connectRedis, releaseRedis } from "./CounterStore.ts"
import { makeRedisRateLimitStore } from "./RateLimitStore.ts"

const redisUrl = "redis://127.0.0.1:6379"

describe("KnownCoolDowns", () => {
  const liveKnown = (ttlMs = 1000) => {
    const state = { live: true }
    return { state, known: new KnownCoolDowns(() => state.live, ttlMs) }
  }

  it("knows nothing until the store answered or a message arrived, and forgets after its TTL", () => {
    const { known } = liveKnown()
    assert.isUndefined(known.known("cxn_a", 1_000))
    known.read(known.mark(), "cxn_a", 0, 1_000)
    assert.strictEqual(known.known("cxn_a", 1_500), 0)
    assert.isUndefined(known.known("cxn_a", 2_000))
    known.heard(coolDownMessage("cxn_b", 30_000), 1_000)
    assert.strictEqual(known.known("cxn_b", 1_200), 31_000)
    known.heard(coolDownMessage("cxn_b", 0), 1_300)
    assert.strictEqual(known.known("cxn_b", 1_400), 0)
  })

  it("keeps no answer of the store begun before a message: it may predate the change", () => {
    const { known } = liveKnown()
    const mark = known.mark()
    known.heard(coolDownMessage("cxn_a", 30_000), 1_000)
    known.read(mark, "cxn_a", 0, 1_010)
    assert.strictEqual(known.known("cxn_a", 1_020), 31_000)
    // a message about another connection also voids an answer in flight
    const second = known.mark()
    known.heard(coolDownMessage("cxn_x", 0), 1_030)
    known.read(second, "cxn_c", 0, 1_040)
    assert.isUndefined(known.known("cxn_c", 1_050))
  })

  it("knows nothing while the subscription is down, and forgets everything when it drops or comes back", () => {
    const { state, known } = liveKnown()
    known.read(known.mark(), "cxn_a", 0, 1_000)
    state.live = false
    assert.isUndefined(known.known("cxn_a", 1_001))
    known.read(known.mark(), "cxn_b", 0, 1_002)
    state.live = true
    assert.isUndefined(known.known("cxn_b", 1_003))
    assert.strictEqual(known.known("cxn_a", 1_004), 0)
    const mark = known.mark()
    known.lost()
    known.read(mark, "cxn_c", 0, 1_005)
    assert.isUndefined(known.known("cxn_a", 1_006))
    assert.isUndefined(known.known("cxn_c", 1_006))
  })

  it("ignores a malformed message (but voids answers in flight)", () => {
    const { known } = liveKnown()
    const mark = known.mark()
    known.heard("nonsense", 1_000)
    known.heard("cxn_a x", 1_000)
    known.read(mark, "cxn_a", 0, 1_000)
    assert.isUndefined(known.known("cxn_a", 1_001))
  })
})

describe("published cool-downs pushed to a process (Redis)", () => {
  const options = { url: redisUrl, keyPrefix: `svc-test:${randomUUID()}:` }
  it.live(
    "a check that counts no rule makes no round trip while the state is known; a publish or clear reaches it",
    () =>
      Effect.gen(function* () {
        const context = yield* Effect.context<never>()
        const client = yield* Effect.acquireRelease(connectRedis(options, context), releaseRedis)
        // A TTL no test waits out: only the channel can change what the process knows.
        const known = yield* subscribeCoolDowns(options, 10 * 60_000)
        const deadline = Date.now() + 10_000
        while (!known.isLive()) {
          if (Date.now() > deadline) return assert.fail("the cool-down subscription did not come up")
          yield* Effect.sleep(Duration.millis(10))
        }
        const store = makeRedisRateLimitStore(client, "redis", false, {}, known)
        // Every script call on this test's keys, as Redis's MONITOR lists them; `seen` waits until
        // the monitor has listed everything sent before it (Redis runs and lists commands in order).
        const monitor = yield* Effect.acquireRelease(
          Effect.promise(() => new Redis(redisUrl).monitor()),
          (m) => Effect.sync(() => m.disconnect())
        )
        let roundTrips = 0
        const markers = new Set<string>()
        monitor.on("monitor", (_time: string, args: ReadonlyArray<string>) => {
          const command = String(args[0]).toLowerCase()
          if ((command === "evalsha" || command === "eval") && args.some((arg) => arg.includes(options.keyPrefix)))
            roundTrips++
          if (command === "echo") markers.add(String(args[1]))
        })
        const seen = Effect.gen(function* () {
          const marker = randomUUID()
          yield* Effect.promise(() => client.echo(marker))
          while (!markers.has(marker)) yield* Effect.sleep(Duration.millis(5))
          return roundTrips
        })
        const coolDowns = yield* CoolDownStore

        const noRule = store.check({ connectionId: "cxn_feed", rules: [] })
        assert.isTrue((yield* noRule).admitted)
        assert.strictEqual(yield* seen, 1)
        assert.isTrue((yield* noRule).admitted)
        assert.strictEqual(yield* seen, 1)

        /** Checks (without a round trip) until `admitted` is as expected, for at most 10 s. */
        const until = (admitted: boolean) =>
          Effect.gen(function* () {
            const end = Date.now() + 10_000
            for (;;) {
              const decision = yield* noRule
              if (decision.admitted === admitted) return decision
              if (Date.now() > end) return assert.fail(`no check answered admitted=${admitted} within 10 s`)
              yield* Effect.sleep(Duration.millis(10))
            }
          })

        yield* coolDowns.publish("cxn_feed", Date.now() + 60_000)
        const cooling = yield* until(false)
        assert.isAbove(cooling.coolDownUntil! - cooling.now, 50_000)
        assert.isAtMost(cooling.coolDownUntil! - cooling.now, 60_000)
        assert.strictEqual(yield* seen, 1)

        // A check that counts a rule still asks the store, which reads the same cool-down.
        const ruled = yield* store.check({
          connectionId: "cxn_feed",
          rules: [
            {
              ruleId: "rl_feed",
              mode: "enforce",
              bucketKey: "-",
              algorithm: { fixed_window: { limit: 10, window: "1m" } }
            }
          ]
        })
        assert.strictEqual(yield* seen, 2)
        assert.isFalse(ruled.admitted)
        assert.isDefined(ruled.coolDownUntil)

        yield* coolDowns.clear("cxn_feed")
        yield* until(true)
        assert.strictEqual(yield* seen, 2)
        // A check that ignores cool-downs is never answered from them.
        yield* store.check({ connectionId: "cxn_feed", rules: [], coolDown: false })
        assert.strictEqual(yield* seen, 3)
      }).pipe(Effect.provide(CoolDownStore.layerRedis(options)), Effect.scoped)
  )
})
