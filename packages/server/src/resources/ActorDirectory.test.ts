/**
 * Stale-if-error of the actor directory (docs/proxy.md "When the database is unavailable"): with
 * the repository failing like an unreachable database, an actor found in the last 5 minutes is
 * still found once its 30 s entry expires; past that bound, or never found, it is 503
 * `store_unavailable`; `invalidate` drops the last known record; a lookup that does not answer
 * within 5 s counts as failed.
 */
import { assert, layer } from "@effect/vitest"
import { ServiceUnavailable } from "@svc/domain/Errors"
import { ActorId } from "@svc/domain/Ids"
import { ActorRepo, type ActorRow } from "@svc/sql/ActorRepo"
import { DateTime, Duration, Effect, Exit, Fiber, Layer, Option, Schema } from "effect"
import { ConnectionError, SqlError } from "effect/sql/SqlError"
import { TestClock } from "effect/testing"
import { ActorDirectory } from "./ActorDirectory.ts"

const store = { down: false, hang: false }

const unreachable = new SqlError({
  reason: new ConnectionError({ cause: new Error("ECONNREFUSED"), message: "connect failed", operation: "connect" })
})

const row = (externalId: string): ActorRow => ({
  id: Schema.decodeUnknownSync(ActorId)(`act_${externalId.padEnd(26, "a")}`),
  externalId,
  namespace: "root",
  name: externalId,
  labels: { team: "core" },
  annotations: {},
  permissions: [],
  source: "api",
  createdAt: DateTime.makeUnsafe(0),
  updatedAt: DateTime.makeUnsafe(0),
  deletedAt: null
})

const actors = new Map([
  ["alice", row("alice")],
  ["bob", row("bob")]
])

const FailingRepo = Layer.succeed(ActorRepo)({
  syncConfigured: () => Effect.succeed([...actors.values()]),
  findByExternalId: (externalId) =>
    Effect.suspend(() =>
      store.hang
        ? Effect.never
        : store.down
          ? Effect.fail(unreachable)
          : Effect.succeed(Option.fromUndefinedOr(actors.get(externalId)))
    ),
  findById: () => Effect.succeed(Option.none())
})

const codeOf = <A, E>(exit: Exit.Exit<A, E>): string => {
  if (Exit.isSuccess(exit)) return "found"
  const reason = exit.cause.reasons.find((r) => r._tag === "Fail")
  return reason?._tag === "Fail" && reason.error instanceof ServiceUnavailable ? reason.error.code : "other"
}

layer(ActorDirectory.layerNoDeps.pipe(Layer.provide(FailingRepo)))("ActorDirectory stale-if-error", (it) => {
  it.effect("serves the last known record for 5 minutes of outage; past it or never found, 503", () =>
    Effect.gen(function* () {
      const directory = yield* ActorDirectory
      const found = yield* directory.findByExternalId("alice")
      assert.isTrue(Option.isSome(found))
      store.down = true
      try {
        yield* TestClock.adjust(Duration.seconds(31))
        const stale = yield* directory.findByExternalId("alice")
        assert.deepStrictEqual(stale, found)
        assert.strictEqual(codeOf(yield* Effect.exit(directory.findByExternalId("bob"))), "store_unavailable")
        // The stale record is cached like a fresh one (30 s); past the 5 minutes, 503.
        yield* TestClock.adjust(Duration.minutes(5))
        assert.strictEqual(codeOf(yield* Effect.exit(directory.findByExternalId("alice"))), "store_unavailable")
      } finally {
        store.down = false
      }
      assert.isTrue(Option.isSome(yield* directory.findByExternalId("bob")))
    })
  )

  it.effect("invalidate drops the last known record", () =>
    Effect.gen(function* () {
      const directory = yield* ActorDirectory
      yield* TestClock.adjust(Duration.minutes(10))
      assert.isTrue(Option.isSome(yield* directory.findByExternalId("alice")))
      yield* directory.invalidate("alice")
      store.down = true
      try {
        assert.strictEqual(codeOf(yield* Effect.exit(directory.findByExternalId("alice"))), "store_unavailable")
      } finally {
        store.down = false
      }
    })
  )

  it.effect("a database that does not answer counts as unavailable after 5 s", () =>
    Effect.gen(function* () {
      const directory = yield* ActorDirectory
      yield* TestClock.adjust(Duration.minutes(10))
      const found = yield* directory.findByExternalId("alice")
      store.hang = true
      try {
        yield* TestClock.adjust(Duration.seconds(31))
        const stale = yield* Effect.forkChild(directory.findByExternalId("alice"))
        yield* Effect.yieldNow
        assert.isUndefined(stale.pollUnsafe())
        yield* TestClock.adjust(Duration.seconds(5))
        assert.deepStrictEqual(yield* Fiber.join(stale), found)
      } finally {
        store.hang = false
      }
    })
  )
})
