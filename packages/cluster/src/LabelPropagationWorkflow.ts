/**
 * Carry-forward propagation (spec 2.4 rules 3–4): after a namespace's or connector's labels or
 * name change, a durable workflow rewrites the materialised labels of its descendants. One
 * execution per queued change (`upToId`: the newest outbox row it covers).
 */
import { LabelPropagationWorkflowName } from "@svc/domain/DurableNames"
import { Schema } from "effect"
import { Workflow } from "effect/workflow"

/** The propagation workflow; succeeds with the number of rows rewritten. */
export const LabelPropagationWorkflow = Workflow.make(LabelPropagationWorkflowName, {
  payload: {
    parentType: Schema.Literals(["namespace", "connector"]),
    parentId: Schema.String,
    upToId: Schema.String
  },
  success: Schema.Number,
  idempotencyKey: ({ parentType, parentId, upToId }) => `${parentType}:${parentId}:${upToId}`
})
