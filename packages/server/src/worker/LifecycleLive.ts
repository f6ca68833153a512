/**
 * The worker side of the connector lifecycle (spec 4.5, 3.1, 3.2): the disconnect-all, archive
 * and per-connection disconnect workflows. Each step that changes the world is an activity, so a
 * run resumed on another runner after a crash skips what it already did: the listed connections,
 * each child's disconnect (whose result is journaled), the forcing and the version transitions.
 *
 * Deadlines are absolute (fixed when the run started): a child gets the run's deadline minus the
 * 5-second parent reserve; a resumed run waits only for what is left of its own. When the
 * deadline passes or a child fails, the remaining connections are forced to `disconnected` and
 * soft-deleted (spec 4.5 rule 3): a completed task means local state is terminal, not that every
 * revocation succeeded.
 */
import {
  ArchiveWorkflow,
  type DisconnectAllOutcome,
  DisconnectAllWorkflow,
  DisconnectConnectionWorkflow
} from "@svc/cluster/LifecycleWorkflows"
import {
  ArchiveFinalizeActivity,
  ArchivePrepareActivity,
  DisconnectAllForceActivity,
  DisconnectAllListActivity,
  DisconnectConnectionActivity,
  DisconnectConnectionForceActivity,
  TaskFinishActivity
} from "@svc/domain/DurableNames"
import type { ConnectionId } from "@svc/domain/Ids"
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import { TaskRepo } from "@svc/sql/TaskRepo"
import { Cause, Clock, Duration, Effect, Layer, Option, Schema } from "effect"
import { Activity } from "effect/workflow"
import { ConnectionDisconnect } from "../connections/ConnectionDisconnect.ts"
import { observeTask } from "./TaskTelemetry.ts"

/** spec 4.5 rule 2: the parent keeps this much of the timeout when scheduling children. */
export const parentReserveMs = 5_000

/** Children of one disconnect-all in flight at once. */
const childConcurrency = 16

const nowDate = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

/** Ends the task of a run (its state, error, lock) — an activity, so a resumed run does it once. */
const finishTask = (taskId: string, outcome: DisconnectAllOutcome | { readonly failure: string }) =>
  Activity.make({
    name: TaskFinishActivity,
    execute: Effect.gen(function* () {
      const tasks = yield* TaskRepo
      const failure = "failure" in outcome ? outcome.failure : undefined
      yield* Effect.orDie(
        tasks.finish(taskId, failure === undefined ? "completed" : "failed", failure ?? null, yield* nowDate)
      )
    })
  })

const childWorkflow = DisconnectConnectionWorkflow.toLayer((payload) =>
  payload.finishTask === true
    ? observeTask("disconnect", payload.taskId, disconnectAsTask(payload))
    : disconnectOne(payload)
)

/** One connection's disconnect before the deadline (journaled: a resumed run does not repeat it). */
function disconnectOne(payload: { readonly taskId: string; readonly connectionId: string; readonly deadline: number }) {
  return Effect.gen(function* () {
    const disconnects = yield* ConnectionDisconnect
    const tasks = yield* TaskRepo
    return yield* Activity.make({
      name: DisconnectConnectionActivity,
      success: DisconnectConnectionWorkflow.successSchema,
      error: Schema.String,
      execute: Effect.gen(function* () {
        const left = payload.deadline - (yield* Clock.currentTimeMillis)
        if (left <= 0) return yield* Effect.fail("the disconnect-all timeout expired")
        const result = yield* disconnects.disconnectById(payload.connectionId).pipe(
          Effect.timeoutOrElse({
            duration: Duration.millis(left),
            orElse: () => Effect.fail("the disconnect-all timeout expired")
          })
        )
        yield* Effect.orDie(tasks.stepDone(payload.taskId, yield* nowDate))
        return result
      })
    })
  })
}

/**
 * `_disconnect` as a task: the disconnect, and when the deadline passes first the connection is
 * forced to `disconnected` (local state terminal, as for a disconnect-all); the task completes.
 */
function disconnectAsTask(payload: {
  readonly taskId: string
  readonly connectionId: string
  readonly deadline: number
}) {
  return asTask(
    payload.taskId,
    Effect.gen(function* () {
      const repo = yield* ConnectionRepo
      const failure = yield* disconnectOne(payload).pipe(
        Effect.as(undefined),
        Effect.catch((error: string) => Effect.succeed(error))
      )
      if (failure === undefined) return { total: 1, forced: 0 } satisfies DisconnectAllOutcome
      yield* Activity.make({
        name: DisconnectConnectionForceActivity,
        execute: Effect.flatMap(nowDate, (now) =>
          Effect.orDie(repo.markDisconnected(payload.connectionId as ConnectionId, now))
        )
      })
      yield* Effect.logWarning(`disconnect of connection ${payload.connectionId} forced (${failure})`)
      return { total: 1, forced: 1, reason: failure } satisfies DisconnectAllOutcome
    })
  ).pipe(Effect.as("disconnected" as const))
}

/** The body of a disconnect-all: list, children until the deadline, force the rest when needed. */
const disconnectAll = (payload: { readonly taskId: string; readonly connectorId: string; readonly deadline: number }) =>
  Effect.gen(function* () {
    const tasks = yield* TaskRepo
    const ids = yield* Activity.make({
      name: DisconnectAllListActivity,
      success: Schema.Array(Schema.String),
      execute: Effect.gen(function* () {
        const listed = yield* Effect.orDie(tasks.disconnectable(payload.connectorId))
        yield* Effect.orDie(tasks.setTotal(payload.taskId, listed.length, yield* nowDate))
        return listed
      })
    })
    const childDeadline = payload.deadline - parentReserveMs
    const children = Effect.forEach(
      ids,
      (connectionId) =>
        DisconnectConnectionWorkflow.execute({ taskId: payload.taskId, connectionId, deadline: childDeadline }),
      { concurrency: childConcurrency, discard: true }
    )
    const left = payload.deadline - (yield* Clock.currentTimeMillis)
    const ended = yield* children.pipe(
      Effect.timeoutOption(Duration.millis(Math.max(0, left))),
      Effect.map((done) => (Option.isSome(done) ? undefined : "timeout")),
      Effect.catch((error: string) => Effect.succeed(`a child failed: ${error}`))
    )
    if (ended === undefined) return { total: ids.length, forced: 0 } satisfies DisconnectAllOutcome
    const forced = yield* Activity.make({
      name: DisconnectAllForceActivity,
      success: Schema.Int,
      execute: Effect.flatMap(nowDate, (now) => Effect.orDie(tasks.forceDisconnected(payload.connectorId, now)))
    })
    yield* Effect.logWarning(
      `disconnect-all of connector ${payload.connectorId} forced ${forced} connection(s) to disconnected (${ended})`
    )
    return { total: ids.length, forced, reason: ended } satisfies DisconnectAllOutcome
  })

/** Runs `body` and ends the task with its outcome (a defect fails the task with a generic reason). */
const asTask = <R>(taskId: string, body: Effect.Effect<DisconnectAllOutcome, never, R>) =>
  Effect.gen(function* () {
    const exit = yield* Effect.exit(body)
    if (exit._tag === "Success") {
      yield* finishTask(taskId, exit.value)
      return exit.value
    }
    if (Cause.hasInterruptsOnly(exit.cause)) return yield* exit
    yield* Effect.logError(`lifecycle task ${taskId} failed`, exit.cause)
    yield* finishTask(taskId, { failure: "the task failed; see the worker's log" })
    return yield* exit
  })

const disconnectAllWorkflow = DisconnectAllWorkflow.toLayer((payload) =>
  payload.finishTask
    ? observeTask("disconnect_all", payload.taskId, asTask(payload.taskId, disconnectAll(payload)))
    : disconnectAll(payload)
)

const archiveWorkflow = ArchiveWorkflow.toLayer((payload) =>
  observeTask(
    "archive",
    payload.taskId,
    asTask(
      payload.taskId,
      Effect.gen(function* () {
        const tasks = yield* TaskRepo
        yield* Activity.make({
          name: ArchivePrepareActivity,
          execute: Effect.flatMap(nowDate, (now) => Effect.orDie(tasks.prepareArchive(payload.connectorId, now)))
        })
        const outcome = yield* DisconnectAllWorkflow.execute({ ...payload, finishTask: false })
        yield* Activity.make({
          name: ArchiveFinalizeActivity,
          execute: Effect.flatMap(nowDate, (now) => Effect.orDie(tasks.finalizeArchive(payload.connectorId, now)))
        })
        return outcome
      })
    )
  )
)

/** The lifecycle workflows, registered with the runner's workflow engine; needs `TaskRepo` and `ConnectionDisconnect`. */
export const layerNoDeps = Layer.mergeAll(childWorkflow, disconnectAllWorkflow, archiveWorkflow)
