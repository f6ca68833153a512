/**
 * The worker side of key rotation (SECURITY.md "Encryption at rest"): the re-encryption workflow,
 * and a singleton that sweeps once at start (sealing plaintext an earlier release stored) and
 * then hands rows of the `reencryptions` outbox (written in the rotation's transaction) to the
 * workflow engine, clearing them once the execution completes.
 */
import { ReencryptionDispatcherSingleton, ReencryptionSweepActivity } from "@svc/domain/DurableNames"
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import { DateTime, Duration, Effect, Layer } from "effect"
import { Singleton } from "effect/cluster"
import { Activity } from "effect/workflow"
import { ReencryptionWorkflow } from "@svc/cluster/ReencryptionWorkflow"
import { Reencryption } from "../crypto/Reencryption.ts"

/** Registers the re-encryption workflow with the ambient `WorkflowEngine`. */
export const workflowLayer = ReencryptionWorkflow.toLayer(
  Effect.fnUntraced(function* () {
    const reencryption = yield* Reencryption
    return yield* Activity.make({
      name: ReencryptionSweepActivity,
      success: ReencryptionWorkflow.successSchema,
      execute: Effect.map(reencryption.sweep, (result) => result.rewritten)
    })
  })
)

/** Tuning of the dispatcher. */
export interface Options {
  readonly pollInterval: Duration.Input
  /**
   * How old a queued rotation must be before it is handled: processes cache a namespace's current
   * key briefly, so waiting that long means no process still seals under the old version.
   */
  readonly settleDelay?: Duration.Input | undefined
}

const dispatchOnce = (options: Options) =>
  Effect.gen(function* () {
    const repo = yield* DataKeyRepo
    const settle = Duration.toMillis(Duration.fromInputUnsafe(options.settleDelay ?? 0))
    const now = DateTime.toEpochMillis(yield* DateTime.now)
    const pending = yield* repo.pendingReencryptions(200, new Date(now - settle))
    // Coalesce: one sweep covers every rotation queued so far.
    const last = pending[pending.length - 1]
    if (last === undefined) return
    const rewritten = yield* ReencryptionWorkflow.execute({ upToId: last.id })
    yield* repo.completeReencryptions(last.id)
    yield* Effect.logDebug(`re-encryption after ${pending.length} rotation(s) rewrote ${rewritten} row(s)`)
  })

/** Sweeps once (after an upgrade, legacy plaintext is sealed here), then polls the outbox. */
const dispatcher = (options: Options) =>
  Effect.flatMap(Reencryption, (reencryption) => reencryption.sweep).pipe(
    Effect.catchCause((cause) => Effect.logWarning("start-up re-encryption sweep failed", cause)),
    Effect.andThen(
      Effect.forever(
        dispatchOnce(options).pipe(
          Effect.catchCause((cause) => Effect.logWarning("re-encryption dispatch failed; retrying", cause)),
          Effect.andThen(Effect.sleep(options.pollInterval))
        )
      )
    )
  )

/** The workflow and the outbox dispatcher, for a worker. */
export const layerNoDeps = (options: Options) =>
  Singleton.make(ReencryptionDispatcherSingleton, dispatcher(options)).pipe(Layer.provideMerge(workflowLayer))
