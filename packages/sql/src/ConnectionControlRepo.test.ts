import { assert, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { type ConnectionControl, ConnectionControlRepo, emptyControl } from "./ConnectionControlRepo.ts"
import * as Migrations from "./Migrations.ts"
import * as TestDatabase from "./TestDatabase.ts"

const T = 1_700_000_000_000
const now = new Date(T)

const cooling: ConnectionControl = {
  consecutive429s: 3,
  coolDownUntil: Option.some(T + 30_000),
  migrationLock: Option.none()
}

for (const [backend, db] of TestDatabase.backends) {
  const Test = ConnectionControlRepo.layer.pipe(Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db)))

  layer(Test, { timeout: "60 seconds" })(`ConnectionControlRepo (${backend})`, (it) => {
    it.effect("a connection without a row has the empty state", () =>
      Effect.gen(function* () {
        const repo = yield* ConnectionControlRepo
        assert.deepStrictEqual(yield* repo.find("cxn_none"), emptyControl)
        assert.deepStrictEqual(yield* repo.findForUpdate("cxn_none"), emptyControl)
      })
    )

    it.effect("save stores, overwrites and, for the empty state, deletes the row", () =>
      Effect.gen(function* () {
        const repo = yield* ConnectionControlRepo
        const sql = yield* SqlClient.SqlClient
        yield* repo.save("cxn_a", cooling, now)
        assert.deepStrictEqual(yield* repo.find("cxn_a"), cooling)

        const locked: ConnectionControl = {
          ...cooling,
          migrationLock: Option.some({ owner: "wf_1", expiresAt: T + 60_000 })
        }
        yield* repo.save("cxn_a", locked, now)
        assert.deepStrictEqual(yield* sql.withTransaction(repo.findForUpdate("cxn_a")), locked)
        yield* repo.save("cxn_b", { ...emptyControl, migrationLock: locked.migrationLock }, now)

        const cleared: ConnectionControl = { ...locked, consecutive429s: 0, coolDownUntil: Option.none() }
        yield* repo.save("cxn_a", cleared, now)
        assert.deepStrictEqual(yield* repo.find("cxn_a"), cleared)

        yield* repo.save("cxn_a", emptyControl, now)
        const rows = yield* sql<{ connectionId: string }>`SELECT connection_id FROM connection_controls ORDER BY 1`
        assert.deepStrictEqual(
          rows.map((row) => row.connectionId),
          ["cxn_b"]
        )
      })
    )

    it.effect("the table refuses a lock owner without an expiry", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const exit = yield* Effect.exit(
          sql`INSERT INTO connection_controls (connection_id, migration_lock_owner, updated_at)
            VALUES ('cxn_bad', 'wf_1', ${now})`
        )
        assert.isTrue(Exit.isFailure(exit))
      })
    )
  })
}
