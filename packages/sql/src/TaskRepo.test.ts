import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectorRepo } from "./ConnectorRepo.ts"
import * as Migrations from "./Migrations.ts"
import { ResourceRepo } from "./ResourceRepo.ts"
import { TaskRepo } from "./TaskRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { at, envelope, fixtureId } from "./TestRows.ts"

for (const [backend, db] of TestDatabase.backends) {
  const Test = Layer.mergeAll(TaskRepo.layer, ResourceRepo.layer, ConnectorRepo.layer).pipe(
    Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db))
  )

  layer(Test, { timeout: "60 seconds" })(`TaskRepo (${backend})`, (it) => {
    it.effect("activeCounts counts the unfinished tasks by type (the svc.queue.queue.size sample)", () =>
      Effect.gen(function* () {
        const tasks = yield* TaskRepo
        const sorted = Effect.map(tasks.activeCounts(), (counts) =>
          [...counts].sort((a, b) => a.type.localeCompare(b.type))
        )
        assert.deepStrictEqual(yield* sorted, [])
        const task = (id: string, type: string) =>
          tasks.create({
            id,
            type,
            actorId: "act_test",
            subjectId: "cxr_test",
            lockKey: null,
            executionId: id,
            now: at(0)
          })
        yield* task("tsk_1", "archive")
        yield* task("tsk_2", "migrate_version")
        yield* task("tsk_3", "migrate_version")
        yield* task("tsk_4", "disconnect")
        yield* tasks.finish("tsk_4", "completed", null, at(1))
        yield* tasks.finish("tsk_3", "failed", "x", at(1))
        yield* task("tsk_5", "migrate_version")
        assert.deepStrictEqual(yield* sorted, [
          { type: "archive", count: 1 },
          { type: "migrate_version", count: 2 }
        ])
      })
    )

    it.effect("hasActive answers for the subject and type of an unfinished task only", () =>
      Effect.gen(function* () {
        const tasks = yield* TaskRepo
        const task = (id: string, type: string, subjectId: string) =>
          tasks.create({ id, type, actorId: "act_test", subjectId, lockKey: null, executionId: id, now: at(0) })
        yield* task("tsk_a1", "migrate_version", "cxn_a")
        yield* task("tsk_a2", "disconnect", "cxn_b")
        assert.isTrue(yield* tasks.hasActive("migrate_version", "cxn_a"))
        assert.isFalse(yield* tasks.hasActive("migrate_version", "cxn_b"))
        assert.isFalse(yield* tasks.hasActive("disconnect", "cxn_a"))
        yield* tasks.finish("tsk_a1", "completed", null, at(1))
        assert.isFalse(yield* tasks.hasActive("migrate_version", "cxn_a"))
        assert.isTrue(yield* tasks.hasActive("disconnect", "cxn_b"))
      })
    )

    it.effect("createDisconnect writes the task and the connection's disconnecting state together", () =>
      Effect.gen(function* () {
        const tasks = yield* TaskRepo
        const resources = yield* ResourceRepo
        const sql = yield* SqlClient.SqlClient
        const connectorId = fixtureId("cxr", "disc")
        yield* resources.insert("connectors", {
          id: connectorId,
          ...envelope("root.td", connectorId),
          state: "draft",
          version: 1,
          type: "http"
        })
        yield* (yield* ConnectorRepo).insertVersion(connectorId, { type: "http" }, at(0))
        const connection = (tag: string, state: string) => {
          const id = fixtureId("cxn", tag)
          return Effect.as(
            resources.insert("connections", {
              id,
              ...envelope("root.td", id),
              connectorId,
              connectorVersion: 1,
              state,
              healthState: "healthy",
              setupStepId: null,
              configurationEnc: null,
              credentialsEnc: null
            }),
            id
          )
        }
        const stateOf = (id: string) =>
          Effect.map(sql<{ state: string }>`SELECT state FROM connections WHERE id = ${id}`, (rows) => rows[0]?.state)
        const disconnect = (taskId: string, subjectId: string) =>
          tasks.createDisconnect({
            id: taskId,
            type: "disconnect",
            actorId: "act_test",
            subjectId,
            lockKey: `connection:${subjectId}`,
            executionId: taskId,
            now: at(1)
          })

        const live = yield* connection("disc_live", "configured")
        assert.strictEqual(yield* disconnect("tsk_d1", live), "Created")
        assert.strictEqual(yield* stateOf(live), "disconnecting")
        assert.isTrue(yield* tasks.hasActive("disconnect", live))

        // A second start while the first runs writes nothing.
        const other = yield* connection("disc_other", "configured")
        yield* sql`UPDATE connections SET state = 'configured' WHERE id = ${live}`
        assert.strictEqual(yield* disconnect("tsk_d2", live), "Locked")
        assert.strictEqual(yield* stateOf(live), "configured")
        assert.strictEqual(yield* stateOf(other), "configured")

        const gone = yield* connection("disc_gone", "disconnected")
        assert.strictEqual(yield* disconnect("tsk_d3", gone), "Created")
        assert.strictEqual(yield* stateOf(gone), "disconnected")
      })
    )
  })
}
