import { randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Option } from "effect"
import { CounterStore, StoreUnavailable } from "./CounterStore.ts"
import { RateLimitStore } from "./RateLimitStore.ts"
import { type RedisCluster, startRedisCluster } from "./testing/RedisCluster.ts"
import { makeRedisTlsFiles, type RedisTlsFiles, startTlsRedisServer, type TlsRedisServer } from "./testing/RedisTls.ts"

/** TLS to Redis (`rediss://` with `counter_store.tls` files) against a private TLS-only redis-server. */
let files: RedisTlsFiles | undefined
let optional: TlsRedisServer | undefined
let required: TlsRedisServer | undefined
/** A TLS-only Redis Cluster of three masters (client, bus and replication links on TLS). */
let cluster: RedisCluster | undefined

beforeAll(async () => {
  files = await makeRedisTlsFiles()
  optional = await startTlsRedisServer(files)
  required = await startTlsRedisServer(files, { authClients: "yes" })
  cluster = await startRedisCluster({
    replicas: 0,
    tls: {
      ca: files.ca,
      cert: files.serverCert,
      key: files.serverKey,
      clientCert: files.clientCert,
      clientKey: files.clientKey
    }
  })
}, 90_000)

afterAll(async () => {
  await optional?.stop()
  await required?.stop()
  await cluster?.stop()
  if (files !== undefined) await fs.rm(files.dir, { recursive: true, force: true })
}, 30_000)

const keyPrefix = () => `svc-test:${randomUUID()}:`

const connectFailure = (exit: Exit.Exit<unknown, StoreUnavailable>): StoreUnavailable => {
  const error = Exit.findErrorOption(exit)
  if (Option.isNone(error)) return assert.fail("the layer was built")
  assert.instanceOf(error.value, StoreUnavailable)
  assert.strictEqual(error.value.operation, "connect")
  return error.value
}

describe("CounterStore.layerRedis over TLS", () => {
  it.live("verifies the server against counter_store.tls.ca and works", () =>
    Effect.gen(function* () {
      const store = yield* CounterStore
      assert.isTrue(yield* store.setIfAbsent("k", "v", 60_000))
      assert.deepStrictEqual(yield* store.get("k"), Option.some("v"))
      yield* store.ping()
    }).pipe(
      Effect.provide(CounterStore.layerRedis({ url: optional!.url, tls: { ca: files!.ca }, keyPrefix: keyPrefix() }))
    )
  )

  it.live("shows the client certificate to a server that requires one", () =>
    Effect.gen(function* () {
      const store = yield* CounterStore
      assert.isTrue(yield* store.setIfAbsent("k", "v", 60_000))
    }).pipe(
      Effect.provide(
        CounterStore.layerRedis({
          url: required!.url,
          tls: { ca: files!.ca, cert: files!.clientCert, key: files!.clientKey },
          keyPrefix: keyPrefix()
        })
      )
    )
  )

  it.live("a server certificate of another CA fails the build promptly, naming the TLS verification problem", () =>
    Effect.gen(function* () {
      const started = Date.now()
      const exit = yield* Effect.exit(
        CounterStore.pipe(
          Effect.provide(
            CounterStore.layerRedis({ url: optional!.url, tls: { ca: files!.otherCa }, keyPrefix: keyPrefix() })
          )
        )
      )
      const error = connectFailure(exit)
      assert.match(error.message, /^the counter store is unavailable \(connect: TLS verification failed: .+\)$/)
      assert.notInclude(error.message, "\n")
      assert.isBelow(Date.now() - started, 5_000)
    })
  )

  it.live("without a client certificate a server that requires one refuses the connection", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        CounterStore.pipe(
          Effect.provide(
            CounterStore.layerRedis({ url: required!.url, tls: { ca: files!.ca }, keyPrefix: keyPrefix() })
          )
        )
      )
      assert.notInclude(connectFailure(exit).message, "\n")
    })
  )

  it.live("an unreadable CA file is named in the failure", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        CounterStore.pipe(
          Effect.provide(
            CounterStore.layerRedis({
              url: optional!.url,
              tls: { ca: `${files!.dir}/missing.crt` },
              keyPrefix: keyPrefix()
            })
          )
        )
      )
      assert.include(connectFailure(exit).message, "cannot read counter_store.tls.ca")
    })
  )

  it.live("a TLS Redis Cluster: every master verified by the CA, keys on every master, a rate-limit check", () => {
    const prefix = keyPrefix()
    const redis = {
      url: "rediss://",
      nodes: cluster!.nodes.map((node) => ({ host: "127.0.0.1", port: node.port })),
      tls: { ca: files!.ca },
      keyPrefix: prefix
    }
    return Effect.gen(function* () {
      const store = yield* CounterStore
      const keys = Array.from({ length: 20 }, (_, i) => `nonce:${i}`)
      for (const key of keys) assert.isTrue(yield* store.setIfAbsent(key, key, 60_000))
      for (const key of keys) assert.deepStrictEqual(yield* store.get(key), Option.some(key))
      const owners = yield* Effect.promise(() => Promise.all(keys.map((key) => cluster!.masterOf(prefix + key))))
      assert.strictEqual(new Set(owners).size, 3)
      yield* store.ping()
      const limits = yield* RateLimitStore
      const check = limits.check({
        connectionId: "cxn_tls",
        rules: [
          { ruleId: "rl_tls", mode: "enforce", bucketKey: "b", algorithm: { fixed_window: { window: "1h", limit: 1 } } }
        ]
      })
      assert.deepStrictEqual([(yield* check).admitted, (yield* check).admitted], [true, false])
    }).pipe(Effect.provide(Layer.merge(CounterStore.layerRedis(redis), RateLimitStore.layerRedis(redis))))
  })

  it.live("a TLS Redis Cluster with a CA that did not sign its certificates fails the build naming TLS", () =>
    Effect.gen(function* () {
      const exit = yield* Effect.exit(
        CounterStore.pipe(
          Effect.provide(
            CounterStore.layerRedis({
              url: "rediss://",
              nodes: cluster!.nodes.map((node) => ({ host: "127.0.0.1", port: node.port })),
              tls: { ca: files!.otherCa },
              keyPrefix: keyPrefix()
            })
          )
        )
      )
      assert.match(
        connectFailure(exit).message,
        /^the counter store is unavailable \(connect: TLS verification failed: .+\)$/
      )
    })
  )
})
