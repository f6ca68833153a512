/**
 * Implementation of the demo workflow. Each activity records its execution in
 * `cluster_demo_steps` (one row per workflow and step, an execution counter) so tests can
 * prove that a replay after restart does not run a completed activity again.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Activity, DurableDeferred } from "effect/workflow"
import { DemoProceed, DemoStepOneActivity, DemoStepTwoActivity, DemoWorkflow } from "./DemoWorkflow.ts"

/** Creates the demo step table if missing. */
export const layerSchema: Layer.Layer<never, never, SqlClient.SqlClient> = Layer.effectDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS cluster_demo_steps (
      workflow_id TEXT NOT NULL,
      step TEXT NOT NULL,
      executions INTEGER NOT NULL,
      PRIMARY KEY (workflow_id, step)
    )`
  }).pipe(Effect.orDie)
)

/** Idempotent step: one row per (workflow, step); `executions` counts how often the body ran. */
const step = (name: string, workflowId: string) =>
  Activity.make({
    name,
    execute: Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`
        INSERT INTO cluster_demo_steps (workflow_id, step, executions) VALUES (${workflowId}, ${name}, 1)
        ON CONFLICT (workflow_id, step) DO UPDATE SET executions = cluster_demo_steps.executions + 1`
    }).pipe(Effect.orDie)
  })

/** Reads how often each activity of the execution for `id` ran (missing steps are 0). */
export const stepExecutions = Effect.fn("DemoWorkflow.stepExecutions")(function* (id: string) {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ readonly step: string; readonly executions: number }>`
    SELECT step, executions FROM cluster_demo_steps WHERE workflow_id = ${id}`.pipe(Effect.orDie)
  const count = (name: string) => rows.find((row) => row.step === name)?.executions ?? 0
  return { stepOne: count(DemoStepOneActivity), stepTwo: count(DemoStepTwoActivity) }
})

/** Registers the demo workflow with the ambient `WorkflowEngine` (requires `SqlClient`). */
export const layer = DemoWorkflow.toLayer(
  Effect.fnUntraced(function* (payload) {
    yield* step(DemoStepOneActivity, payload.id)
    yield* DurableDeferred.await(DemoProceed)
    yield* step(DemoStepTwoActivity, payload.id)
    return `completed:${payload.id}`
  })
).pipe(Layer.provide(layerSchema))
