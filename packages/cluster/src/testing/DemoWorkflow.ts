/**
 * The demo two-activity workflow: step one, a durable pause, step two. It proves that a workflow
 * resumes after a process restart without re-running completed activities (ARCHITECTURE "Durable work").
 */
import { Effect, Schema } from "effect"
import { DurableDeferred, Workflow } from "effect/workflow"
/** Two-activity test workflow proving resume-after-restart. */
export const DemoWorkflowName = "svc.demo.two-step.v1"

/** First activity of the test workflow. */
export const DemoStepOneActivity = "svc.demo.step-one.v1"

/** Second activity of the test workflow. */
export const DemoStepTwoActivity = "svc.demo.step-two.v1"

/** Durable deferred the test workflow waits on between its two activities. */
export const DemoProceedDeferred = "svc.demo.proceed.v1"

/** Demo workflow, one execution per `id`; succeeds with `completed:<id>`. */
export const DemoWorkflow = Workflow.make(DemoWorkflowName, {
  payload: { id: Schema.String },
  success: Schema.String,
  idempotencyKey: ({ id }) => id
})

/** Durable pause between the two activities; completed by `proceed`. */
export const DemoProceed = DurableDeferred.make(DemoProceedDeferred)

/** Lets the execution for `id` continue past its pause (durable: works before, during or after the pause). */
export const proceed = Effect.fn("DemoWorkflow.proceed")(function* (id: string) {
  const token = yield* DurableDeferred.tokenFromPayload(DemoProceed, { workflow: DemoWorkflow, payload: { id } })
  yield* DurableDeferred.succeed(DemoProceed, { token, value: undefined })
})
