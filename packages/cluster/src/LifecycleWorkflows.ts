/**
 * Connector lifecycle workflows (spec 4.5, 3.1, 3.2) with the spec's durable names. Each run is
 * one task (`taskId`, the execution's idempotency key: a new task is a new run, while the task
 * row's lock keeps one run per connector active). Deadlines travel as epoch milliseconds fixed
 * when the run started, so a run resumed on another runner keeps the caller's timeout.
 * Handlers: `packages/server/src/worker/LifecycleLive.ts`.
 */
import {
  ArchiveWorkflowName,
  DisconnectAllWorkflowName,
  DisconnectConnectionWorkflowName
} from "@svc/domain/DurableNames"
import { Schema } from "effect"
import { Workflow } from "effect/workflow"

const EpochMillis = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** How a disconnect-all ended. */
export const DisconnectAllOutcome = Schema.Struct({
  /** Connections it set out to disconnect. */
  total: Schema.Int,
  /** Connections forced to `disconnected` after the timeout or a failed child. */
  forced: Schema.Int,
  /** Why the rest were forced: `timeout`, or the first child's error; absent when none were. */
  reason: Schema.optionalKey(Schema.String)
})
export type DisconnectAllOutcome = typeof DisconnectAllOutcome.Type

/**
 * spec 4.5 rule 1: disconnects one connection (revoke the refresh then the access token, erase
 * the credentials, `disconnected`, soft delete) before `deadline`; fails with the reason.
 */
export const DisconnectConnectionWorkflow = Workflow.make(DisconnectConnectionWorkflowName, {
  payload: {
    taskId: Schema.String,
    connectionId: Schema.String,
    deadline: EpochMillis,
    /** The run is its own task (`_disconnect`, not a disconnect-all's child): it ends the task, forcing the connection at the deadline. */
    finishTask: Schema.optionalKey(Schema.Boolean)
  },
  success: Schema.Literals(["disconnected", "gone"]),
  error: Schema.String,
  idempotencyKey: ({ taskId, connectionId }) => `${taskId}:${connectionId}`
})

/**
 * spec 4.5: one child per live connection of the connector, each with the deadline minus the
 * 5-second parent reserve; when the deadline passes or a child fails, the remaining connections
 * are forced to `disconnected` and soft-deleted. `finishTask`: the run is the task (not the child
 * of an archive) and ends it.
 */
export const DisconnectAllWorkflow = Workflow.make(DisconnectAllWorkflowName, {
  payload: {
    taskId: Schema.String,
    connectorId: Schema.String,
    deadline: EpochMillis,
    finishTask: Schema.Boolean
  },
  success: DisconnectAllOutcome,
  idempotencyKey: ({ taskId }) => taskId
})

/** spec 4.5: prepare the versions, the disconnect-all as a child (same deadline), finalize. */
export const ArchiveWorkflow = Workflow.make(ArchiveWorkflowName, {
  payload: { taskId: Schema.String, connectorId: Schema.String, deadline: EpochMillis },
  success: DisconnectAllOutcome,
  idempotencyKey: ({ taskId }) => taskId
})
