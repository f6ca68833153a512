/**
 * Re-encryption after a key rotation (SECURITY.md "Encryption at rest"): a durable workflow that
 * re-seals every stale secret under its namespace's current data key. One execution per batch of
 * queued rotations (`upToId`: the newest outbox row it covers).
 */
import { ReencryptionWorkflowName } from "@svc/domain/DurableNames"
import { Schema } from "effect"
import { Workflow } from "effect/workflow"

/** The re-encryption workflow; succeeds with the number of rows rewritten. */
export const ReencryptionWorkflow = Workflow.make(ReencryptionWorkflowName, {
  payload: { upToId: Schema.String },
  success: Schema.Number,
  idempotencyKey: ({ upToId }) => upToId
})
