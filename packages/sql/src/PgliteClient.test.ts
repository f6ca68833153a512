import { assert, it, layer } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { Runner, RunnerAddress, RunnerStorage, ShardId, ShardingConfig, SqlRunnerStorage } from "effect/cluster"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import * as PgliteClient from "./PgliteClient.ts"
import * as TestDatabase from "./TestDatabase.ts"

layer(TestDatabase.pglite, { timeout: "60 seconds" })("PgliteClient", (it) => {
  it.effect("serialises transactions: concurrent read-then-write increments never lose an update", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE pglite_counter (id int PRIMARY KEY, value int NOT NULL)`
      yield* sql`INSERT INTO pglite_counter VALUES (1, 0)`
      const increment = sql.withTransaction(
        Effect.gen(function* () {
          const [row] = yield* sql<{ value: number }>`SELECT value FROM pglite_counter WHERE id = 1`
          yield* Effect.yieldNow
          yield* sql`SELECT pg_catalog.now()`
          yield* sql`UPDATE pglite_counter SET value = ${row!.value + 1} WHERE id = 1`
        })
      )
      yield* Effect.all(
        Array.from({ length: 8 }, () => increment),
        { concurrency: "unbounded", discard: true }
      )
      assert.deepStrictEqual(yield* sql`SELECT value FROM pglite_counter`, [{ value: 8 }])
    })
  )

  it.effect("a statement outside an open transaction waits for it instead of running inside it", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`CREATE TABLE pglite_isolation (id int PRIMARY KEY, value int NOT NULL)`
      yield* sql`INSERT INTO pglite_isolation VALUES (1, 0)`
      const written = yield* Deferred.make<void>()
      const proceed = yield* Deferred.make<void>()
      const transaction = yield* Effect.forkChild(
        sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`UPDATE pglite_isolation SET value = 1 WHERE id = 1`
            yield* Deferred.succeed(written, undefined)
            yield* Deferred.await(proceed)
            return yield* Effect.fail("rolled back" as const)
          })
        )
      )
      yield* Deferred.await(written)
      const outside = yield* Effect.forkChild(sql<{ value: number }>`SELECT value FROM pglite_isolation WHERE id = 1`)
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow
      assert.isUndefined(outside.pollUnsafe())
      yield* Deferred.succeed(proceed, undefined)
      assert.isTrue(Exit.isFailure(yield* Fiber.await(transaction)))
      // Had it run inside the open transaction, it would have read the uncommitted 1.
      assert.deepStrictEqual(yield* Fiber.join(outside), [{ value: 0 }])
    })
  )

  it.effect("reserve holds the session exclusively until its scope closes", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const order: Array<string> = []
      const reserved = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      const holder = yield* Effect.forkChild(
        Effect.scoped(
          Effect.gen(function* () {
            const conn = yield* sql.reserve
            yield* conn.executeRaw("SELECT 1", [])
            yield* Deferred.succeed(reserved, undefined)
            yield* Deferred.await(release)
            order.push("reserved done")
          })
        )
      )
      yield* Deferred.await(reserved)
      const other = yield* Effect.forkChild(Effect.tap(sql`SELECT 2`, () => Effect.sync(() => order.push("statement"))))
      for (let i = 0; i < 20; i++) yield* Effect.yieldNow
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      yield* Fiber.join(other)
      assert.deepStrictEqual(order, ["reserved done", "statement"])
    })
  )

  it.effect("runs effect/cluster's SqlRunnerStorage with table leases", () =>
    Effect.gen(function* () {
      const storage = yield* RunnerStorage.RunnerStorage
      const address = RunnerAddress.make("localhost", 34431)
      const machineId = yield* storage.register(Runner.make({ address, groups: ["default"], weight: 1 }), true)
      assert.isTrue(machineId >= 1)
      const shards = [ShardId.make("default", 1), ShardId.make("default", 2)]
      const acquired = yield* storage.acquire(address, shards)
      assert.deepStrictEqual(acquired.map(ShardId.toString).sort(), shards.map(ShardId.toString).sort())
      const other = RunnerAddress.make("localhost", 34432)
      assert.deepStrictEqual(yield* storage.acquire(other, shards), [])
      assert.strictEqual((yield* storage.getRunners).length, 1)
      yield* storage.releaseAll(address)
      assert.strictEqual((yield* storage.acquire(other, shards)).length, 2)
    }).pipe(Effect.provide(SqlRunnerStorage.layer.pipe(Layer.provide(ShardingConfig.layer()))))
  )
})

it.effect(
  "keeps its data after closing and reopening the same data dir",
  () =>
    Effect.gen(function* () {
      const dir = yield* Effect.acquireRelease(
        Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "svc-pglite-reopen-"))),
        (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
      )
      const dataDir = Path.join(dir, "data")
      const client = PgliteClient.layer({ dataDir })
      yield* Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE reopened (some_value text NOT NULL)`
        yield* sql.withTransaction(sql`INSERT INTO reopened ${sql.insert({ someValue: "kept" })}`)
      }).pipe(Effect.provide(client))
      const rows = yield* Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        return yield* sql`SELECT some_value FROM reopened`
      }).pipe(Effect.provide(client))
      assert.deepStrictEqual(rows, [{ someValue: "kept" }])
    }),
  { timeout: 60_000 }
)
