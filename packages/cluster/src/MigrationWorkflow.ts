/**
 * The version migration workflow (spec 4.3) with its durable name. One run is one task
 * (`taskId`, the execution's idempotency key); the connection's migration lock (the `Connection`
 * entity, owner `taskId`) keeps one run per connection. The deadline is epoch milliseconds fixed
 * when the run started, so a run resumed on another runner keeps the caller's timeout.
 * Handlers: `packages/server/src/worker/MigrationLive.ts`.
 */
import { MigrateVersionWorkflowName } from "@svc/domain/DurableNames"
import { Schema } from "effect"
import { Workflow } from "effect/workflow"

const EpochMillis = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const Version = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))

/** How a migration ended when it did not fail. */
export const MigrationOutcome = Schema.Struct({
  /** Hooks that ran. */
  hooks: Schema.Int,
  /** The connection now needs re-authentication (spec 4.3 rule 4). */
  reauth: Schema.Boolean,
  /** The configure step the actor resumes from, when a required field is missing. */
  setupStepId: Schema.NullOr(Schema.String)
})
export type MigrationOutcome = typeof MigrationOutcome.Type

/**
 * spec 4.3: runs the hooks from `sourceVersion` to `targetVersion`, writes every effect in one
 * transaction, then runs the target's enabled probes once; fails with the reason (nothing persisted).
 */
export const MigrateVersionWorkflow = Workflow.make(MigrateVersionWorkflowName, {
  payload: {
    taskId: Schema.String,
    connectionId: Schema.String,
    sourceVersion: Version,
    targetVersion: Version,
    deadline: EpochMillis
  },
  success: MigrationOutcome,
  error: Schema.String,
  idempotencyKey: ({ taskId }) => taskId
})
