import { randomUUID } from "node:crypto"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, type Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { Redis } from "ioredis"
import { CounterStore, type RedisNode, StoreUnavailable } from "./CounterStore.ts"
import { type RedisCluster, startRedisCluster } from "./testing/RedisCluster.ts"

const redisUrl = "redis://127.0.0.1:6379"
const uniqueRedisPrefix = (): string => `svc-test:${randomUUID()}:`

type Store = CounterStore["Service"]

interface Backend {
  readonly name: string
  readonly layer: () => Layer.Layer<CounterStore, StoreUnavailable>
  readonly test: typeof it.effect
  /** Returns once `key` (set with `ttlMillis`) has expired. */
  readonly expire: (store: Store, key: string, ttlMillis: number) => Effect.Effect<void, StoreUnavailable>
}

/**
 * A private three-master Redis Cluster (no replicas) for the `redis-cluster` backend; the slots of
 * a lost master stop serving, the others go on (`cluster-require-full-coverage no`).
 */
let cluster: RedisCluster | undefined
beforeAll(async () => {
  cluster = await startRedisCluster({ replicas: 0, requireFullCoverage: false })
}, 60_000)
afterAll(() => cluster?.stop(), 30_000)

const clusterNodes = (): ReadonlyArray<RedisNode> =>
  cluster!.nodes.map((node) => ({ host: "127.0.0.1", port: node.port }))

const pollUntilGone = (store: Store, key: string) =>
  Effect.gen(function* () {
    const deadline = Date.now() + 5_000
    while (Option.isSome(yield* store.get(key))) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`${key} did not expire within 5 s`))
      yield* Effect.sleep(Duration.millis(10))
    }
  })

const backends: ReadonlyArray<Backend> = [
  {
    name: "memory",
    layer: () => CounterStore.layerMemory,
    test: it.effect,
    expire: (_store, _key, ttlMillis) => TestClock.adjust(Duration.millis(ttlMillis))
  },
  {
    name: "redis",
    layer: () => CounterStore.layerRedis({ url: redisUrl, keyPrefix: uniqueRedisPrefix() }),
    test: it.live,
    expire: pollUntilGone
  },
  {
    name: "redis-cluster",
    layer: () => CounterStore.layerRedis({ url: "redis://", nodes: clusterNodes(), keyPrefix: uniqueRedisPrefix() }),
    test: it.live,
    expire: pollUntilGone
  }
]

for (const backend of backends) {
  describe(`CounterStore conformance: ${backend.name}`, () => {
    const test = (name: string, body: (store: Store) => Effect.Effect<void, StoreUnavailable>) =>
      backend.test(name, () => Effect.flatMap(CounterStore, body).pipe(Effect.provide(backend.layer())))

    test("setIfAbsent stores once and get returns the first value", (store) =>
      Effect.gen(function* () {
        assert.deepStrictEqual(yield* store.get("a"), Option.none())
        assert.isTrue(yield* store.setIfAbsent("a", "first", 60_000))
        assert.isFalse(yield* store.setIfAbsent("a", "second", 60_000))
        assert.deepStrictEqual(yield* store.get("a"), Option.some("first"))
        assert.isTrue(yield* store.setIfAbsent("b", "other", 60_000))
        assert.deepStrictEqual(yield* store.get("b"), Option.some("other"))
      }))

    test("exactly one of many concurrent setIfAbsent wins", (store) =>
      Effect.gen(function* () {
        const results = yield* Effect.all(
          Array.from({ length: 50 }, (_, i) => store.setIfAbsent("race", `v${i}`, 60_000)),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(results.filter(Boolean).length, 1)
        const winner = results.indexOf(true)
        assert.deepStrictEqual(yield* store.get("race"), Option.some(`v${winner}`))
      }))

    test("delete removes a live entry and reports whether it existed", (store) =>
      Effect.gen(function* () {
        assert.isFalse(yield* store.delete("d"))
        assert.isTrue(yield* store.setIfAbsent("d", "x", 60_000))
        assert.isTrue(yield* store.delete("d"))
        assert.deepStrictEqual(yield* store.get("d"), Option.none())
        assert.isFalse(yield* store.delete("d"))
        assert.isTrue(yield* store.setIfAbsent("d", "y", 60_000))
      }))

    test("an entry is gone after its TTL and can be set again", (store) =>
      Effect.gen(function* () {
        assert.isTrue(yield* store.setIfAbsent("short", "x", 150))
        assert.isTrue(yield* store.setIfAbsent("long", "y", 60_000))
        yield* backend.expire(store, "short", 150)
        assert.deepStrictEqual(yield* store.get("short"), Option.none())
        assert.isFalse(yield* store.delete("short"))
        assert.deepStrictEqual(yield* store.get("long"), Option.some("y"))
        assert.isTrue(yield* store.setIfAbsent("short", "z", 60_000))
        assert.deepStrictEqual(yield* store.get("short"), Option.some("z"))
      }))

    test("a TTL below one millisecond is rounded up, not rejected", (store) =>
      Effect.gen(function* () {
        assert.isTrue(yield* store.setIfAbsent("tiny", "x", 0.2))
        yield* backend.expire(store, "tiny", 1)
        assert.isTrue(yield* store.setIfAbsent("tiny", "x", 60_000))
      }))

    test("ping succeeds", (store) => store.ping())
  })
}

describe("CounterStore.layerMemory", () => {
  it.effect("expires exactly at set time + TTL on the Clock", () =>
    Effect.gen(function* () {
      const store = yield* CounterStore
      assert.isTrue(yield* store.setIfAbsent("k", "v", 1000))
      yield* TestClock.adjust(Duration.millis(999))
      assert.deepStrictEqual(yield* store.get("k"), Option.some("v"))
      assert.isFalse(yield* store.setIfAbsent("k", "w", 1000))
      yield* TestClock.adjust(Duration.millis(1))
      assert.deepStrictEqual(yield* store.get("k"), Option.none())
    }).pipe(Effect.provide(CounterStore.layerMemory))
  )

  it.effect("each layer build has its own state", () =>
    Effect.gen(function* () {
      const first = yield* CounterStore.pipe(Effect.provide(CounterStore.layerMemory))
      const second = yield* CounterStore.pipe(Effect.provide(CounterStore.layerMemory))
      assert.isTrue(yield* first.setIfAbsent("k", "v", 1000))
      assert.isTrue(yield* second.setIfAbsent("k", "v", 1000))
    })
  )
})

describe("CounterStore.layerRedis", () => {
  it.live("namespaces every key under keyPrefix", () =>
    Effect.gen(function* () {
      const prefix = uniqueRedisPrefix()
      const raw = yield* Effect.acquireRelease(
        Effect.sync(() => new Redis(redisUrl)),
        (client) => Effect.promise(() => client.quit())
      )
      yield* Effect.gen(function* () {
        const store = yield* CounterStore
        assert.isTrue(yield* store.setIfAbsent("k", "v", 60_000))
      }).pipe(Effect.provide(CounterStore.layerRedis({ url: redisUrl, keyPrefix: prefix })))
      assert.strictEqual(yield* Effect.promise(() => raw.get(`${prefix}k`)), "v")
      const ttl = yield* Effect.promise(() => raw.pttl(`${prefix}k`))
      assert.isTrue(ttl > 50_000 && ttl <= 60_000, `pttl ${ttl}`)
      assert.strictEqual(yield* Effect.promise(() => raw.exists("k")), 0)
      yield* Effect.promise(() => raw.del(`${prefix}k`))
    })
  )

  it.live("closes its connection when the layer is released", () =>
    Effect.gen(function* () {
      const name = `svc-test-${randomUUID()}`
      const raw = yield* Effect.acquireRelease(
        Effect.sync(() => new Redis(redisUrl)),
        (client) => Effect.promise(() => client.quit())
      )
      const connected = Effect.map(
        Effect.promise(() => raw.client("LIST")),
        (list) => String(list).includes(`name=${name} `)
      )
      yield* Effect.gen(function* () {
        const store = yield* CounterStore
        yield* store.ping()
        assert.isTrue(yield* connected)
      }).pipe(
        Effect.provide(CounterStore.layerRedis({ url: redisUrl, keyPrefix: uniqueRedisPrefix(), connectionName: name }))
      )
      const deadline = Date.now() + 5_000
      while (yield* connected) {
        if (Date.now() > deadline) assert.fail(`connection ${name} still open after release`)
        yield* Effect.sleep(Duration.millis(10))
      }
    })
  )

  it.live("fails to build with StoreUnavailable when Redis is unreachable", () =>
    Effect.gen(function* () {
      const exit = yield* CounterStore.pipe(
        Effect.provide(CounterStore.layerRedis({ url: "redis://127.0.0.1:1", keyPrefix: uniqueRedisPrefix() })),
        Effect.exit
      )
      assert.isTrue(Exit.isFailure(exit))
      const error = Exit.findErrorOption(exit)
      assert.isTrue(
        Option.isSome(error) && error.value instanceof StoreUnavailable && error.value.operation === "connect"
      )
      // the start-up line names why
      if (Option.isSome(error)) {
        assert.strictEqual(
          error.value.message,
          "the counter store is unavailable (connect: connect ECONNREFUSED 127.0.0.1:1)"
        )
      }
    })
  )
})

describe("CounterStore.layerRedis on a Redis Cluster", () => {
  it.live("single-key commands work on every master's slots (MOVED followed from any seed)", () => {
    const prefix = uniqueRedisPrefix()
    return Effect.gen(function* () {
      const store = yield* CounterStore
      const keys = Array.from({ length: 30 }, (_, i) => `nonce:${i}`)
      for (const key of keys) assert.isTrue(yield* store.setIfAbsent(key, key, 60_000))
      const owners = new Set(
        yield* Effect.promise(() => Promise.all(keys.map((key) => cluster!.masterOf(prefix + key))))
      )
      assert.strictEqual(owners.size, 3)
      for (const key of keys) {
        assert.deepStrictEqual(yield* store.get(key), Option.some(key))
        assert.isFalse(yield* store.setIfAbsent(key, "again", 60_000))
        assert.isTrue(yield* store.delete(key))
      }
      yield* store.ping()
    }).pipe(
      // one seed only: the client learns the other masters from it
      Effect.provide(CounterStore.layerRedis({ url: "redis://", nodes: clusterNodes().slice(0, 1), keyPrefix: prefix }))
    )
  })

  it.live("fails to build with StoreUnavailable naming the reason when no seed answers", () =>
    Effect.gen(function* () {
      const started = Date.now()
      const exit = yield* CounterStore.pipe(
        Effect.provide(
          CounterStore.layerRedis({
            url: "redis://",
            nodes: [{ host: "127.0.0.1", port: 1 }],
            keyPrefix: uniqueRedisPrefix(),
            connectTimeoutMillis: 500
          })
        ),
        Effect.exit
      )
      const error = Exit.findErrorOption(exit)
      assert.isTrue(Option.isSome(error) && error.value instanceof StoreUnavailable)
      if (Option.isNone(error)) return
      assert.strictEqual(error.value.operation, "connect")
      assert.match(error.value.message, /^the counter store is unavailable \(connect: .+\)$/)
      assert.notInclude(error.value.message, "\n")
      assert.isBelow(Date.now() - started, 5_000)
    })
  )

  // Last in the file: it leaves the cluster without one of its masters.
  it.live("a killed master: its keys fail promptly with StoreUnavailable, the others still answer, ping fails", () => {
    const prefix = uniqueRedisPrefix()
    return Effect.gen(function* () {
      const store = yield* CounterStore
      const keys = Array.from({ length: 30 }, (_, i) => `k:${i}`)
      const owners = yield* Effect.promise(() => Promise.all(keys.map((key) => cluster!.masterOf(prefix + key))))
      const victim = owners[0]!
      yield* Effect.promise(() => cluster!.nodes.find((node) => node.port === victim)!.kill())
      for (const [i, key] of keys.entries()) {
        const started = Date.now()
        const exit = yield* Effect.exit(store.setIfAbsent(key, "v", 60_000))
        assert.isBelow(Date.now() - started, 1_500, key)
        if (owners[i] === victim) {
          assert.isTrue(Exit.isFailure(exit), key)
        } else {
          assert.deepStrictEqual(exit, Exit.succeed(true), key)
        }
      }
      const ping = yield* Effect.exit(store.ping())
      assert.isTrue(Exit.isFailure(ping))
    }).pipe(
      Effect.provide(
        CounterStore.layerRedis({
          url: "redis://",
          nodes: clusterNodes(),
          keyPrefix: prefix,
          commandTimeoutMillis: 500
        })
      )
    )
  })
})
