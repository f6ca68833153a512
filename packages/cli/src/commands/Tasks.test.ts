import { assert, describe, it } from "@effect/vitest"
import { Runtime } from "effect"
import type { Task } from "@svc/domain/Task"
import { taskOutcomeFailure, taskProgressText, taskTable } from "./Tasks.ts"

const task = (overrides: Partial<Task> = {}): Task => ({
  id: "tsk_1",
  type: "disconnect_all",
  state: "active",
  createdAt: "2026-11-24T06:00:00.000Z",
  updatedAt: "2026-11-24T06:00:05.000Z",
  ...overrides
})

describe("tasks get", () => {
  it("shows a progress bar once the total is known", () => {
    assert.strictEqual(taskProgressText(task()), "task tsk_1 (disconnect_all): active")
    assert.strictEqual(
      taskProgressText(task({ progress: { done: 1, total: 4 } })),
      "[########----------------------] 1/4 25% disconnect_all active"
    )
  })

  it("a failed or unknown task is exit 8 with its error on one line; completed is no failure", () => {
    const failed = taskOutcomeFailure(task({ state: "failed", error: "child failed" }))
    assert.strictEqual(failed?.message, "task tsk_1 (disconnect_all) failed: child failed")
    assert.strictEqual(failed?.[Runtime.errorExitCode], 8)
    assert.strictEqual(taskOutcomeFailure(task({ state: "unknown" }))?.[Runtime.errorExitCode], 8)
    assert.strictEqual(taskOutcomeFailure(task({ state: "completed" })), undefined)
  })

  it("-o table is aligned field/value lines", () => {
    assert.deepStrictEqual(taskTable(task({ state: "failed", error: "boom", progress: { done: 2, total: 3 } })), [
      "id        tsk_1",
      "type      disconnect_all",
      "state     failed",
      "progress  2/3",
      "error     boom",
      "created   2026-11-24 06:00:00",
      "updated   2026-11-24 06:00:05"
    ])
  })
})
