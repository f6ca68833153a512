/**
 * The worker side of a version migration (spec 4.3): the `core.connection.migrate_version.v1`
 * workflow. The hooks and the one transaction are one activity (journaled: a resumed run does not
 * repeat it, and the transaction itself marks the task so a crash between the commit and the
 * journal entry never applies the hooks twice); the refresh attempt and the probes after the
 * switch are a second; ending the task and freeing the connection's migration lock a third.
 */
import { MigrateVersionWorkflow, MigrationOutcome } from "@svc/cluster/MigrationWorkflow"
import {
  MigrateVersionAfterActivity,
  MigrateVersionApplyActivity,
  MigrateVersionFinishActivity
} from "@svc/domain/DurableNames"
import { Cause, Effect, Schema } from "effect"
import { Activity } from "effect/workflow"
import { type MigrationRun, VersionMigration } from "../connections/VersionMigration.ts"
import { observeTask } from "./TaskTelemetry.ts"

const Applied = Schema.Struct({ ...MigrationOutcome.fields, refresh: Schema.Boolean })

const finish = (run: MigrationRun, failure: string | undefined) =>
  Activity.make({
    name: MigrateVersionFinishActivity,
    execute: Effect.gen(function* () {
      const migration = yield* VersionMigration
      yield* migration.finish(run, failure)
    })
  })

const migrate = (run: MigrationRun) =>
  Effect.gen(function* () {
    const migration = yield* VersionMigration
    const exit = yield* Effect.exit(
      Activity.make({
        name: MigrateVersionApplyActivity,
        success: Applied,
        error: Schema.String,
        execute: migration.apply(run)
      })
    )
    if (exit._tag === "Failure") {
      if (Cause.hasInterruptsOnly(exit.cause)) return yield* exit
      const failure = Cause.findErrorOption(exit.cause)
      const message = failure._tag === "Some" ? failure.value : "the migration failed; see the worker's log"
      if (failure._tag === "None") yield* Effect.logError(`migration task ${run.taskId} failed`, exit.cause)
      else yield* Effect.logWarning(`migration task ${run.taskId} of connection ${run.connectionId} failed: ${message}`)
      yield* finish(run, message)
      return yield* Effect.fail(message)
    }
    const applied = exit.value
    yield* Activity.make({ name: MigrateVersionAfterActivity, execute: migration.after(run, applied) })
    yield* finish(run, undefined)
    return { hooks: applied.hooks, reauth: applied.reauth, setupStepId: applied.setupStepId }
  })

/** The migration workflow, registered with the runner's workflow engine; needs `VersionMigration`. */
export const layerNoDeps = MigrateVersionWorkflow.toLayer((payload) =>
  observeTask("migrate_version", payload.taskId, migrate(payload))
)
