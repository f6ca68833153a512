import { randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Exit, Option } from "effect"
import { CounterStore, StoreUnavailable } from "./CounterStore.ts"
import { makeRedisTlsFiles, type RedisTlsFiles, startTlsRedisServer, type TlsRedisServer } from "./testing/RedisTls.ts"

/** TLS to Redis (`rediss://` with `counter_store.tls` files) against a private TLS-only redis-server. */
let files: RedisTlsFiles | undefined
let optional: TlsRedisServer | undefined
let required: TlsRedisServer | undefined

beforeAll(async () => {
  files = await makeRedisTlsFiles()
  optional = await startTlsRedisServer(files)
  required = await startTlsRedisServer(files, { authClients: "yes" })
}, 60_000)

afterAll(async () => {
  await optional?.stop()
  await required?.stop()
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
})
