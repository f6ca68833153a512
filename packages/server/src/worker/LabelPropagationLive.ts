/**
 * The worker side of carry-forward (spec 2.4 rule 3): the propagation workflow, a singleton that
 * hands rows of the `label_propagations` outbox (written in the same transaction as the parent
 * change) to the workflow engine and clears them once the execution completes, and the periodic
 * consistency checker that reconciles everything and corrects any drift.
 */
import {
  LabelConsistencyCheckerSingleton,
  LabelConsistencyCheckRun,
  LabelPropagationDispatcherSingleton,
  LabelPropagationReconcileActivity
} from "@svc/domain/DurableNames"
import { LabelReconciler } from "@svc/sql/LabelReconciler"
import { MaintenanceRunRepo } from "@svc/sql/MaintenanceRunRepo"
import { ResourceRepo } from "@svc/sql/ResourceRepo"
import { DateTime, Duration, Effect, Layer, Option } from "effect"
import { Singleton } from "effect/cluster"
import { Activity } from "effect/workflow"
import { LabelPropagationWorkflow } from "@svc/cluster/LabelPropagationWorkflow"
import { ConnectionChanges } from "../resources/ConnectionChanges.ts"

/** Every process's proxy caches drop the connections a batch rewrote (spec 2.4 rule 5). */
const rewritten = Effect.map(ConnectionChanges, (changes) => (ids: ReadonlyArray<string>) => changes.written(ids))

/** Registers the propagation workflow with the ambient `WorkflowEngine`. */
export const workflowLayer = LabelPropagationWorkflow.toLayer(
  Effect.fnUntraced(function* (payload) {
    const reconciler = yield* LabelReconciler
    const published = yield* rewritten
    return yield* Activity.make({
      name: LabelPropagationReconcileActivity,
      success: LabelPropagationWorkflow.successSchema,
      execute: Effect.map(
        payload.parentType === "namespace"
          ? reconciler.namespaceSubtree(payload.parentId, published)
          : reconciler.connector(payload.parentId, published),
        (result) => result.updated
      ).pipe(Effect.orDie)
    })
  })
)

/** Tuning of the dispatcher and the checker. */
export interface Options {
  readonly pollInterval: Duration.Input
  readonly consistencyCheckInterval: Duration.Input
}

const dispatchOnce = Effect.gen(function* () {
  const repo = yield* ResourceRepo
  const pending = yield* repo.pendingPropagations(200)
  // Coalesce: one execution per parent covers every change queued for it so far.
  const latest = new Map<string, { parentType: "namespace" | "connector"; parentId: string; upToId: string }>()
  for (const task of pending) {
    latest.set(`${task.parentType}:${task.parentId}`, {
      parentType: task.parentType,
      parentId: task.parentId,
      upToId: task.id
    })
  }
  for (const task of latest.values()) {
    const updated = yield* LabelPropagationWorkflow.execute(task)
    yield* repo.completePropagations(task.parentType, task.parentId, task.upToId)
    yield* Effect.logDebug(`label propagation for ${task.parentType} ${task.parentId} rewrote ${updated} row(s)`)
  }
})

/** Polls the outbox; failures are logged and retried on the next tick. */
const dispatcher = (options: Options) =>
  Effect.forever(
    dispatchOnce.pipe(
      Effect.catchCause((cause) => Effect.logWarning("label propagation dispatch failed; retrying", cause)),
      Effect.andThen(Effect.sleep(options.pollInterval))
    )
  )

const lastRun = Effect.flatMap(MaintenanceRunRepo, (runs) =>
  Effect.map(runs.lastRun(LabelConsistencyCheckRun), Option.getOrUndefined)
)

const recordRun = (at: Date) =>
  Effect.flatMap(MaintenanceRunRepo, (runs) => runs.recordRun(LabelConsistencyCheckRun, at))

/** Runs the full reconciliation when it is due (its last run is stored, so restarts keep the rhythm). */
const checker = (options: Options) => {
  const interval = Duration.toMillis(Duration.fromInputUnsafe(options.consistencyCheckInterval))
  const step = Effect.gen(function* () {
    const now = DateTime.toEpochMillis(yield* DateTime.now)
    const last = yield* lastRun
    const due = last === undefined ? now : last.getTime() + interval
    if (due > now) return Math.min(due - now, 60_000)
    const reconciler = yield* LabelReconciler
    const result = yield* reconciler.all(yield* rewritten)
    yield* recordRun(new Date(now))
    yield* Effect.logInfo(`label consistency check corrected ${result.updated} row(s)`)
    return Math.min(interval, 60_000)
  })
  return Effect.forever(
    step.pipe(
      Effect.catchCause((cause) =>
        Effect.as(Effect.logWarning("label consistency check failed; retrying", cause), 5_000)
      ),
      Effect.flatMap((wait) => Effect.sleep(Duration.millis(wait)))
    )
  )
}

/** The workflow, the outbox dispatcher and the consistency checker, for a worker. */
export const layerNoDeps = (options: Options) =>
  Layer.mergeAll(
    Singleton.make(LabelPropagationDispatcherSingleton, dispatcher(options)),
    Singleton.make(LabelConsistencyCheckerSingleton, checker(options))
  ).pipe(Layer.provideMerge(workflowLayer))
