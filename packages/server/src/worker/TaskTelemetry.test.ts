/**
 * The task span and duration through the real worker wiring: a disconnect-all (of a connector
 * with no connection) run by the in-memory workflow engine, with the `Telemetry` of the layer's
 * build context — as `Serve` provides it — and a real task table.
 */
import { assert, layer } from "@effect/vitest"
import { DisconnectAllWorkflow } from "@svc/cluster/LifecycleWorkflows"
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import * as Migrations from "@svc/sql/Migrations"
import { TaskRepo } from "@svc/sql/TaskRepo"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Effect, Layer } from "effect"
import { TestRunner } from "effect/cluster"
import { WorkflowEngine } from "effect/workflow"
import { resolveTelemetry } from "../config/TelemetryConfig.ts"
import { ConnectionDisconnect } from "../connections/ConnectionDisconnect.ts"
import { Meter } from "../telemetry/Metrics.ts"
import { makeTelemetry, Telemetry } from "../telemetry/Telemetry.ts"
import { type ExportedSpan, makeTracer } from "../telemetry/Tracing.ts"
import * as LifecycleLive from "./LifecycleLive.ts"

const spans: Array<ExportedSpan> = []
const store = new Meter()
const telemetry = makeTelemetry(
  resolveTelemetry({ prometheus: { enabled: true } }, {}, []),
  makeTracer({ push: (span) => spans.push(span) }, 1),
  store,
  () => undefined
)

const Database = TaskRepo.layer.pipe(
  Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, TestDatabase.pgliteMemory))
)

const Test = LifecycleLive.layerNoDeps.pipe(
  // No connection to disconnect: neither is called.
  Layer.provide([Layer.mock(ConnectionDisconnect, {}), Layer.mock(ConnectionRepo, {}), TestRunner.layer]),
  Layer.provideMerge(WorkflowEngine.layerMemory),
  Layer.provideMerge(Database),
  Layer.provide(Layer.succeed(Telemetry, telemetry))
)

layer(Test, { timeout: "60 seconds", excludeTestServices: true })("task telemetry in the worker", (it) => {
  it.effect("a disconnect-all task runs under its task span and records its duration once", () =>
    Effect.gen(function* () {
      const tasks = yield* TaskRepo
      const created = new Date(Date.now() - 2_000)
      yield* tasks.create({
        id: "tsk_telemetry",
        type: "disconnect_all",
        actorId: "act_test",
        subjectId: "cxr_none",
        lockKey: null,
        executionId: "tsk_telemetry",
        now: created
      })
      const outcome = yield* DisconnectAllWorkflow.execute({
        taskId: "tsk_telemetry",
        connectorId: "cxr_none",
        deadline: Date.now() + 60_000,
        finishTask: true
      })
      assert.deepStrictEqual(outcome, { total: 0, forced: 0 })

      const task = spans.filter((s) => s.name === "task disconnect_all")
      assert.strictEqual(task.length, 1)
      assert.deepStrictEqual(Object.fromEntries(task[0]!.attributes), {
        "svc.queue.task_type": "disconnect_all",
        "svc.queue.retry_count": 0
      })
      assert.strictEqual(task[0]!.statusCode, 0)
      const durations = store.series("svc.queue.task.duration")
      assert.deepStrictEqual(
        durations.map((s) => [s.attributes, s.count]),
        [[{ "svc.queue.task_type": "disconnect_all", result: "completed" }, 1]]
      )
      assert.isAtLeast(durations[0]!.value, 2)
    })
  )
})
