import { assert, describe, it } from "@effect/vitest"
import * as ClusterRuntime from "@svc/cluster/ClusterRuntime"
import { ConnectionEntity } from "@svc/cluster/ConnectionEntity"
import { testRuntimeOptions } from "@svc/cluster/testing/TestCluster"
import { maxMigrationLockTtlMs } from "@svc/domain/Migration"
import { ConnectionControlRepo, emptyControl } from "@svc/sql/ConnectionControlRepo"
import { ConnectorRepo } from "@svc/sql/ConnectorRepo"
import { ResourceRepo } from "@svc/sql/ResourceRepo"
import { at, envelope, fixtureId } from "@svc/sql/TestRows"
import * as Migrations from "@svc/sql/Migrations"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Duration, Effect, Exit, Layer, Option } from "effect"
import { Entity, Sharding, ShardingConfig } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { CoolDownStore } from "../stores/CoolDownStore.ts"
import * as ConnectionEntityLive from "./ConnectionEntityLive.ts"

const T = 1_700_000_000_000

/** `rate_limiting` with the default exponential backoff and no jitter: 1s, 2s, 4s, … capped at 5m. */
const backoff = {
  maxRetryAfterMs: 15 * 60_000,
  defaultRetryAfterMs: 60_000,
  exponentialBackoff: { initialIntervalMs: 1_000, multiplier: 2, maxIntervalMs: 300_000, jitterFraction: 0 }
}

// The stores outlive every entity activation, as they outlive a runner in production.
const stores = Layer.mergeAll(ConnectionControlRepo.layer, CoolDownStore.layerMemory, Migrations.layerMain).pipe(
  Layer.provideMerge(TestDatabase.pgliteMemory),
  Layer.orDie
)

// Each run builds new, in-memory activations of the entity (no sharding, no message storage).
const makeTestClient = Entity.makeTestClient(ConnectionEntity, ConnectionEntityLive.layerNoDeps())

/**
 * Runs `use` with fresh activations of the entity (in memory, no sharding): leaving it ends them,
 * so a second call rehydrates from the stored rows like a restarted runner.
 */
const activations = <A, E, R>(use: (connection: Effect.Success<typeof makeTestClient>) => Effect.Effect<A, E, R>) =>
  Effect.scoped(Effect.flatMap(makeTestClient, use)).pipe(Effect.provide(ShardingConfig.layer()))

describe("ConnectionEntity (test client, PGlite)", () => {
  it.effect("429 reports raise the streak and publish the end; the end never moves earlier; success clears", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T)
      const store = yield* CoolDownStore
      const repo = yield* ConnectionControlRepo
      yield* activations((connection) =>
        Effect.gen(function* () {
          const cxn = yield* connection("cxn_a")
          const other = yield* connection("cxn_b")
          assert.deepStrictEqual(yield* cxn.coolDown(), { consecutive429s: 0, until: Option.none() })

          assert.deepStrictEqual(yield* cxn.reportUpstream429({ observedAt: T, settings: backoff }), {
            consecutive429s: 1,
            until: Option.some(T + 1_000)
          })
          assert.deepStrictEqual(yield* store.get("cxn_a"), Option.some(T + 1_000))
          assert.deepStrictEqual(yield* cxn.reportUpstream429({ observedAt: T, settings: backoff }), {
            consecutive429s: 2,
            until: Option.some(T + 2_000)
          })
          assert.deepStrictEqual(yield* cxn.reportUpstream429({ observedAt: T, retryAfterMs: 30_000 }), {
            consecutive429s: 3,
            until: Option.some(T + 30_000)
          })
          // A shorter Retry-After (e.g. a request already in flight) does not shorten the cool-down.
          assert.deepStrictEqual(yield* cxn.reportUpstream429({ observedAt: T + 10, retryAfterMs: 5_000 }), {
            consecutive429s: 4,
            until: Option.some(T + 30_000)
          })
          assert.deepStrictEqual(yield* store.get("cxn_a"), Option.some(T + 30_000))
          assert.deepStrictEqual(yield* cxn.coolDown(), { consecutive429s: 4, until: Option.some(T + 30_000) })
          assert.deepStrictEqual(yield* repo.find("cxn_a"), {
            consecutive429s: 4,
            coolDownUntil: Option.some(T + 30_000),
            migrationLock: Option.none()
          })
          assert.deepStrictEqual(yield* other.coolDown(), { consecutive429s: 0, until: Option.none() })
          assert.deepStrictEqual(yield* store.get("cxn_b"), Option.none())

          // The cool-down ends on the clock; the streak stays until a success.
          yield* TestClock.adjust(Duration.millis(30_000))
          assert.deepStrictEqual(yield* cxn.coolDown(), { consecutive429s: 4, until: Option.none() })
          assert.deepStrictEqual(yield* store.get("cxn_a"), Option.none())
          assert.deepStrictEqual(yield* cxn.reportUpstream429({ observedAt: T + 30_000, settings: backoff }), {
            consecutive429s: 5,
            until: Option.some(T + 30_000 + 16_000)
          })

          yield* cxn.reportSuccess()
          assert.deepStrictEqual(yield* cxn.coolDown(), { consecutive429s: 0, until: Option.none() })
          assert.deepStrictEqual(yield* store.get("cxn_a"), Option.none())
          assert.deepStrictEqual(yield* repo.find("cxn_a"), emptyControl)
          yield* cxn.reportSuccess()
          assert.deepStrictEqual(yield* cxn.reportUpstream429({ observedAt: T + 31_000, settings: backoff }), {
            consecutive429s: 1,
            until: Option.some(T + 32_000)
          })
        })
      )
    }).pipe(Effect.provide(stores))
  )

  it.effect("the migration lock is exclusive, renewable by its holder, released only by it, and expires", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T)
      yield* activations((connection) =>
        Effect.gen(function* () {
          const cxn = yield* connection("cxn_a")
          assert.deepStrictEqual(yield* cxn.inspectMigrationLock(), Option.none())
          assert.deepStrictEqual(yield* cxn.acquireMigrationLock({ owner: "m1", ttlMs: 1_000 }), {
            _tag: "Acquired",
            owner: "m1",
            expiresAt: T + 1_000
          })
          assert.deepStrictEqual(yield* cxn.acquireMigrationLock({ owner: "m2", ttlMs: 60_000 }), {
            _tag: "HeldBy",
            owner: "m1",
            expiresAt: T + 1_000
          })
          // Another connection's lock is independent.
          const other = yield* connection("cxn_b")
          assert.strictEqual((yield* other.acquireMigrationLock({ owner: "m2", ttlMs: 1_000 }))._tag, "Acquired")

          assert.deepStrictEqual(yield* cxn.acquireMigrationLock({ owner: "m1", ttlMs: 5_000 }), {
            _tag: "Acquired",
            owner: "m1",
            expiresAt: T + 5_000
          })
          assert.deepStrictEqual(yield* cxn.inspectMigrationLock(), Option.some({ owner: "m1", expiresAt: T + 5_000 }))
          assert.isFalse(yield* cxn.releaseMigrationLock({ owner: "m2" }))
          assert.isTrue(yield* cxn.releaseMigrationLock({ owner: "m1" }))
          assert.isFalse(yield* cxn.releaseMigrationLock({ owner: "m1" }))
          assert.deepStrictEqual(yield* cxn.inspectMigrationLock(), Option.none())

          assert.deepStrictEqual(yield* cxn.acquireMigrationLock({ owner: "m2", ttlMs: 1_000 }), {
            _tag: "Acquired",
            owner: "m2",
            expiresAt: T + 1_000
          })
          yield* TestClock.adjust(Duration.millis(999))
          assert.strictEqual((yield* cxn.acquireMigrationLock({ owner: "m3", ttlMs: 1_000 }))._tag, "HeldBy")
          yield* TestClock.adjust(Duration.millis(1))
          assert.deepStrictEqual(yield* cxn.inspectMigrationLock(), Option.none())
          assert.deepStrictEqual(yield* cxn.acquireMigrationLock({ owner: "m3", ttlMs: 1_000 }), {
            _tag: "Acquired",
            owner: "m3",
            expiresAt: T + 2_000
          })
          // The lapsed holder cannot release its successor's lock.
          assert.isFalse(yield* cxn.releaseMigrationLock({ owner: "m2" }))
          assert.deepStrictEqual(yield* cxn.inspectMigrationLock(), Option.some({ owner: "m3", expiresAt: T + 2_000 }))
        })
      )
    }).pipe(Effect.provide(stores))
  )

  it.effect(
    "a 429 report is capped at the connector's max_retry_after and starts at most the clock skew ahead; a lock at the longest task timeout",
    () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(T)
        const resources = yield* ResourceRepo
        const connectors = yield* ConnectorRepo
        /** A connection on a one-version connector whose definition has this `rate_limiting` (none: omitted). */
        const connectionOn = (tag: string, rateLimiting?: object) =>
          Effect.gen(function* () {
            const connectorId = fixtureId("cxr", tag)
            yield* resources.insert("connectors", {
              id: connectorId,
              ...envelope("root", connectorId),
              state: "draft",
              version: 1,
              type: "http"
            })
            const definition =
              rateLimiting === undefined ? { type: "http" } : { type: "http", rate_limiting: rateLimiting }
            yield* connectors.insertVersion(connectorId, definition, at(0))
            const id = fixtureId("cxn", tag)
            yield* resources.insert("connections", {
              id,
              ...envelope("root", id),
              connectorId,
              connectorVersion: 1,
              state: "configured",
              healthState: "healthy",
              setupStepId: null,
              configurationEnc: null,
              credentialsEnc: null
            })
            return id
          }).pipe(Effect.orDie)
        const twoMinutes = yield* connectionOn("capped", { max_retry_after: "2m", default_retry_after: "30s" })
        const defaults = yield* connectionOn("defaults")
        const disabled = yield* connectionOn("disabled", { disabled: true })
        // What the attacker sent: a one-hour Retry-After with settings allowing it.
        const attack = {
          observedAt: T,
          retryAfterMs: 3_600_000,
          settings: { ...backoff, maxRetryAfterMs: 3_600_000 }
        }
        yield* activations((connection) =>
          Effect.gen(function* () {
            assert.deepStrictEqual(yield* (yield* connection(twoMinutes)).reportUpstream429(attack), {
              consecutive429s: 1,
              until: Option.some(T + 120_000)
            })
            // Without rate_limiting in the definition: the spec default cap, 15 minutes.
            assert.deepStrictEqual(yield* (yield* connection(defaults)).reportUpstream429(attack), {
              consecutive429s: 1,
              until: Option.some(T + 15 * 60_000)
            })
            // An unknown connection: the spec default cap too.
            assert.deepStrictEqual(yield* (yield* connection("cxn_unknown")).reportUpstream429(attack), {
              consecutive429s: 1,
              until: Option.some(T + 15 * 60_000)
            })
            // A disabled limiter: no cool-down at all.
            assert.deepStrictEqual(yield* (yield* connection(disabled)).reportUpstream429(attack), {
              consecutive429s: 1,
              until: Option.none()
            })
            // A report from a day ahead starts at most the allowed clock skew ahead.
            assert.deepStrictEqual(
              yield* (yield* connection(twoMinutes)).reportUpstream429({ ...attack, observedAt: T + 86_400_000 }),
              { consecutive429s: 2, until: Option.some(T + ConnectionEntityLive.maxClockSkewMs + 120_000) }
            )
            // Within the caps, the report's own arithmetic applies.
            assert.deepStrictEqual(
              yield* (yield* connection(defaults)).reportUpstream429({
                observedAt: T + 1_000,
                retryAfterMs: 1_000_000
              }),
              { consecutive429s: 2, until: Option.some(T + 1_000 + 900_000) }
            )
            // A migration lock longer than the longest task timeout (1 day) plus the grace is refused.
            const cxn = yield* connection(twoMinutes)
            const tooLong = yield* Effect.exit(cxn.acquireMigrationLock({ owner: "tsk_x", ttlMs: 10 * 86_400_000 }))
            assert.isTrue(Exit.isFailure(tooLong))
            assert.deepStrictEqual(yield* cxn.inspectMigrationLock(), Option.none())
            assert.strictEqual(maxMigrationLockTtlMs, 86_400_000 + 60_000)
            assert.deepStrictEqual(yield* cxn.acquireMigrationLock({ owner: "tsk_x", ttlMs: maxMigrationLockTtlMs }), {
              _tag: "Acquired",
              owner: "tsk_x",
              expiresAt: T + maxMigrationLockTtlMs
            })
          })
        )
      }).pipe(Effect.provide(Layer.mergeAll(ResourceRepo.layer, ConnectorRepo.layer).pipe(Layer.provideMerge(stores))))
  )

  it.effect("a new activation rehydrates the stored state and republishes a running cool-down", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T)
      const store = yield* CoolDownStore
      yield* activations((connection) =>
        Effect.gen(function* () {
          const cxn = yield* connection("cxn_a")
          yield* cxn.reportUpstream429({ observedAt: T, retryAfterMs: 60_000 })
          yield* cxn.reportUpstream429({ observedAt: T, retryAfterMs: 60_000 })
          yield* cxn.acquireMigrationLock({ owner: "m1", ttlMs: 60_000 })
        })
      )
      // The published copy is lost (e.g. a Redis restart); the entity's row is the truth.
      yield* store.clear("cxn_a")
      yield* TestClock.adjust(Duration.millis(1_000))
      yield* activations((connection) =>
        Effect.gen(function* () {
          const cxn = yield* connection("cxn_a")
          assert.deepStrictEqual(yield* cxn.coolDown(), { consecutive429s: 2, until: Option.some(T + 60_000) })
          assert.deepStrictEqual(yield* store.get("cxn_a"), Option.some(T + 60_000))
          assert.deepStrictEqual(yield* cxn.inspectMigrationLock(), Option.some({ owner: "m1", expiresAt: T + 60_000 }))
          assert.strictEqual((yield* cxn.acquireMigrationLock({ owner: "m2", ttlMs: 1_000 }))._tag, "HeldBy")
          assert.deepStrictEqual(yield* cxn.reportUpstream429({ observedAt: T + 1_000, settings: backoff }), {
            consecutive429s: 3,
            until: Option.some(T + 60_000)
          })
        })
      )
    }).pipe(Effect.provide(stores))
  )
})

// Built per use: each `Effect.provide` starts a runner on the test database and stops it at the end.
const runtime = ConnectionEntityLive.layerNoDeps().pipe(
  Layer.provideMerge(ClusterRuntime.layerSingle(testRuntimeOptions)),
  Layer.provideMerge(Layer.mergeAll(ConnectionControlRepo.layer, Migrations.layerMain).pipe(Layer.orDie))
)

for (const [backend, database] of TestDatabase.backends) {
  describe(`ConnectionEntity on the cluster runtime (${backend})`, () => {
    it.live(
      "persisted changes survive a runtime restart; the entity rehydrates",
      () =>
        Effect.gen(function* () {
          const now = Date.now()
          const first = yield* Effect.gen(function* () {
            const cxn = (yield* ConnectionEntity.client)("cxn_restart")
            const coolDown = yield* cxn.reportUpstream429({ observedAt: now, retryAfterMs: 600_000 })
            const lock = yield* cxn.acquireMigrationLock({ owner: "m1", ttlMs: 600_000 })
            const held = yield* cxn.acquireMigrationLock({ owner: "m2", ttlMs: 1_000 })
            return {
              coolDown,
              lock: lock._tag,
              held: held._tag,
              published: yield* (yield* CoolDownStore).get("cxn_restart")
            }
          }).pipe(Effect.provide(runtime), Effect.provide(CoolDownStore.layerMemory))
          assert.deepStrictEqual(first, {
            coolDown: { consecutive429s: 1, until: Option.some(now + 600_000) },
            lock: "Acquired",
            held: "HeldBy",
            published: Option.some(now + 600_000)
          })

          // A new runtime with an empty cool-down store, as on another runner after a shard move.
          const second = yield* Effect.gen(function* () {
            const cxn = (yield* ConnectionEntity.client)("cxn_restart")
            const coolDown = yield* cxn.coolDown()
            const holder = yield* cxn.inspectMigrationLock()
            const published = yield* (yield* CoolDownStore).get("cxn_restart")
            const next = yield* cxn.reportUpstream429({ observedAt: now })
            const released = yield* cxn.releaseMigrationLock({ owner: "m1" })
            return { coolDown, holder: Option.map(holder, (h) => h.owner), published, next, released }
          }).pipe(Effect.provide(runtime), Effect.provide(CoolDownStore.layerMemory))
          assert.deepStrictEqual(second, {
            coolDown: { consecutive429s: 1, until: Option.some(now + 600_000) },
            holder: Option.some("m1"),
            published: Option.some(now + 600_000),
            next: { consecutive429s: 2, until: Option.some(now + 600_000) },
            released: true
          })
          // Changes are persisted messages (redelivered after a crash); reads are volatile.
          const sql = yield* SqlClient.SqlClient
          const stored = yield* sql<{ readonly tag: string }>`
            SELECT tag FROM cluster_messages WHERE entity_type = 'Connection' ORDER BY id`.withoutTransform
          assert.deepStrictEqual(
            stored.map((row) => row.tag),
            [
              "reportUpstream429",
              "acquireMigrationLock",
              "acquireMigrationLock",
              "reportUpstream429",
              "releaseMigrationLock"
            ]
          )
          assert.deepStrictEqual(yield* (yield* ConnectionControlRepo).find("cxn_restart"), {
            consecutive429s: 2,
            coolDownUntil: Option.some(now + 600_000),
            migrationLock: Option.none()
          })
        }).pipe(
          Effect.provide(Layer.merge(ConnectionControlRepo.layer, Migrations.layerMain).pipe(Layer.orDie)),
          Effect.provide(database)
        ),
      { timeout: 60_000 }
    )
  })
}

describe("ConnectionEntity passivation (pglite)", () => {
  const quicklyIdle = ConnectionEntityLive.layerNoDeps({ maxIdleTime: "200 millis" }).pipe(
    Layer.provideMerge(ClusterRuntime.layerSingle(testRuntimeOptions)),
    Layer.provideMerge(Layer.mergeAll(ConnectionControlRepo.layer, Migrations.layerMain).pipe(Layer.orDie)),
    Layer.provideMerge(CoolDownStore.layerMemory)
  )

  it.live(
    "an idle entity leaves memory and its next message rehydrates it",
    () =>
      Effect.gen(function* () {
        const sharding = yield* Sharding.Sharding
        const cxn = (yield* ConnectionEntity.client)("cxn_idle")
        yield* cxn.acquireMigrationLock({ owner: "m1", ttlMs: 600_000 })
        assert.strictEqual(yield* sharding.activeEntityCount, 1)
        // The reaper looks every 5 s at the soonest.
        const deadline = Date.now() + 20_000
        while ((yield* sharding.activeEntityCount) > 0) {
          if (Date.now() > deadline) assert.fail("the idle entity was not passivated within 20 s")
          yield* Effect.sleep("100 millis")
        }
        assert.deepStrictEqual(
          Option.map(yield* cxn.inspectMigrationLock(), (holder) => holder.owner),
          Option.some("m1")
        )
        assert.strictEqual(yield* sharding.activeEntityCount, 1)
      }).pipe(Effect.provide(quicklyIdle), Effect.provide(TestDatabase.pglite)),
    { timeout: 60_000 }
  )
})
