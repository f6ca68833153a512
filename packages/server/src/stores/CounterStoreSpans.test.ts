/**
 * The counter-store spans of the cool-down and nonce stores (spec 8.3 "key-value store spans (key
 * names only, never values)"), made as the rate-limit store makes its own: on Redis, only when
 * traces are on, under the caller's span, the key names and never a value, a nonce or its hash.
 */
import { randomUUID } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Tracer } from "effect"
import { noopTelemetry, Telemetry } from "../telemetry/Telemetry.ts"
import { type ExportedSpan, makeTracer } from "../telemetry/Tracing.ts"
import { CoolDownStore } from "./CoolDownStore.ts"
import { CounterStore } from "./CounterStore.ts"
import { NonceStore, nonceKey } from "./NonceStore.ts"

const redisUrl = "redis://127.0.0.1:6379"

const redisStores = () => {
  const redis = { url: redisUrl, keyPrefix: `svc-test:${randomUUID()}:` }
  return Layer.merge(
    CoolDownStore.layerRedis(redis),
    NonceStore.layerNoDeps.pipe(Layer.provide(CounterStore.layerRedis(redis)))
  )
}

const memoryStores = Layer.merge(CoolDownStore.layerMemory, NonceStore.layerMemory)

/** Publishes, reads and clears a cool-down, and claims a nonce, under a server span; returns what was exported. */
const run = (stores: Layer.Layer<CoolDownStore | NonceStore, unknown>, tracing: boolean, nonce: string) =>
  Effect.gen(function* () {
    const pushed: Array<ExportedSpan> = []
    const tracer = makeTracer({ push: (span) => pushed.push(span) }, 1)
    const server = tracer.start("HTTP GET", "server", undefined)
    yield* Effect.gen(function* () {
      const coolDowns = yield* CoolDownStore
      const nonces = yield* NonceStore
      yield* coolDowns.publish("cxn_spans", Date.now() + 60_000)
      assert.isTrue((yield* coolDowns.get("cxn_spans"))._tag === "Some")
      yield* coolDowns.clear("cxn_spans")
      assert.isTrue(yield* nonces.claim(nonce, Math.floor(Date.now() / 1000)))
    }).pipe(
      Effect.provide(stores),
      Effect.provideService(Telemetry, tracing ? { ...noopTelemetry, tracing: true } : noopTelemetry),
      Effect.provideService(Tracer.ParentSpan, server),
      Effect.provideService(Tracer.Tracer, tracer)
    )
    return { server, spans: pushed.filter((span) => span.name.startsWith("counter_store.")) }
  })

const attributesOf = (span: ExportedSpan | undefined) => Object.fromEntries(span?.attributes ?? [])

describe("counter-store spans", () => {
  it.live("the Redis cool-down and nonce stores span each command with key names only", () =>
    Effect.gen(function* () {
      const nonce = `nonce-${randomUUID()}`
      const { server, spans } = yield* run(redisStores(), true, nonce)
      assert.deepStrictEqual(
        spans.map((span) => [span.name, span.kind, span.parentSpanId === server.spanId]),
        [
          ["counter_store.cool_down_publish", "client", true],
          ["counter_store.cool_down_get", "client", true],
          ["counter_store.cool_down_clear", "client", true],
          ["counter_store.nonce_claim", "client", true]
        ]
      )
      const key = "cool-down:{rl}:cxn_spans"
      assert.deepStrictEqual(spans.map(attributesOf), [
        { "db.system.name": "redis", "db.operation.name": "SET", "svc.counter_store.keys": key },
        { "db.system.name": "redis", "db.operation.name": "GET", "svc.counter_store.keys": key },
        { "db.system.name": "redis", "db.operation.name": "DEL", "svc.counter_store.keys": key },
        { "db.system.name": "redis", "db.operation.name": "SET", "svc.counter_store.keys": "nonce:*" }
      ])
      // Neither the nonce nor its hash (the stored key) is in any span.
      const exported = JSON.stringify(spans.map((span) => [span.name, [...span.attributes]]))
      assert.notInclude(exported, nonce)
      assert.notInclude(exported, nonceKey(nonce).slice("nonce:".length))
    })
  )

  it.live("no span with traces off, nor from the in-memory stores (as the rate-limit store)", () =>
    Effect.gen(function* () {
      assert.deepStrictEqual((yield* run(redisStores(), false, `nonce-${randomUUID()}`)).spans, [])
      assert.deepStrictEqual((yield* run(memoryStores, true, `nonce-${randomUUID()}`)).spans, [])
    })
  )
})
