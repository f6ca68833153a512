import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Migrations from "./Migrations.ts"
import { TaskRepo } from "./TaskRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { at } from "./TestRows.ts"

for (const [backend, db] of TestDatabase.backends) {
  const Test = TaskRepo.layer.pipe(Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db)))

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
  })
}
