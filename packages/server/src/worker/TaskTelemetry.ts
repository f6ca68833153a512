/**
 * Telemetry of the durable tasks the worker runs (spec 8.3, docs/telemetry.md): every run of a
 * task's workflow handler is a `task {type}` span (attributes `svc.queue.task_type`,
 * `svc.queue.retry_count`; status Error when the task fails), a task that ends
 * records `svc.queue.task.duration` (from the task's creation, by type and result), and the
 * worker samples `svc.queue.queue.size` (active tasks by type) from the task table. With
 * telemetry off none of it runs: the handler is the body itself and no sampler is started.
 */
import { TaskType } from "@svc/domain/Task"
import { TaskRepo } from "@svc/sql/TaskRepo"
import { Cause, Clock, type Duration, Effect, Layer, Schedule } from "effect"
import { Telemetry } from "../telemetry/Telemetry.ts"

/** Runs of each task's handler started in this process so far (removed when the task ends). */
const runs = new Map<string, number>()

/**
 * `body`, the handler of task `taskId` of `type`, observed: a span for this run and, when the run
 * ends the task (a success or a failure, not a suspension or an interruption), the duration.
 * `svc.queue.retry_count` is how many runs of this task's handler this process started before
 * this one (the workflow engine re-runs a handler after a suspension, e.g. while it waits for
 * children, and after an interrupted attempt); a run resumed on another worker starts again at 0.
 */
export const observeTask = <A, E, R>(
  type: TaskType,
  taskId: string,
  body: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R | TaskRepo> =>
  Effect.gen(function* () {
    const telemetry = yield* Telemetry
    if (!telemetry.tracing && !telemetry.metering) return yield* body
    const retryCount = runs.get(taskId) ?? 0
    runs.set(taskId, retryCount + 1)
    const started = yield* Clock.currentTimeMillis
    const span = telemetry.startSpan(`task ${type}`, undefined, {
      "svc.queue.task_type": type,
      "svc.queue.retry_count": retryCount
    })
    const exit = yield* Effect.exit(span.span === undefined ? body : Effect.withParentSpan(body, span.span))
    if (exit._tag === "Failure" && Cause.hasInterruptsOnly(exit.cause)) {
      // Suspended or interrupted: this run is over, the task is not.
      span.end()
      return yield* exit
    }
    runs.delete(taskId)
    const result = exit._tag === "Success" ? "completed" : "failed"
    // A fixed error type: a task's failure message is for the task row and the log, not a span.
    span.end(result === "failed" ? "task_failed" : undefined)
    if (telemetry.metering) {
      const now = yield* Clock.currentTimeMillis
      const tasks = yield* TaskRepo
      const createdAt = yield* tasks.find(taskId).pipe(
        Effect.map((row) => (row._tag === "Some" ? row.value.createdAt.getTime() : started)),
        Effect.orElseSucceed(() => started)
      )
      telemetry.queue.taskEnded(type, result, Math.max(0, now - createdAt) / 1000)
    }
    return yield* exit
  })

/** Samples the active tasks by type into `svc.queue.queue.size` every `interval` (telemetry off: nothing). */
export const queueSizeLayer = (interval: Duration.Input): Layer.Layer<never, never, TaskRepo> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const telemetry = yield* Telemetry
      if (!telemetry.metering) return
      const tasks = yield* TaskRepo
      const sample = tasks.activeCounts().pipe(
        Effect.tap((counts) => {
          const byType = new Map(counts.map((c) => [c.type, c.count]))
          // Every known type, so a type whose tasks all ended reads 0 rather than its last count.
          for (const type of TaskType.literals) telemetry.queue.queueSize(type, byType.get(type) ?? 0)
          for (const [type, count] of byType)
            if (!(TaskType.literals as ReadonlyArray<string>).includes(type)) telemetry.queue.queueSize(type, count)
          return Effect.void
        }),
        Effect.catch((error) => Effect.logWarning("sampling the task queue size failed", error))
      )
      yield* Effect.forkScoped(Effect.repeat(sample, Schedule.spaced(interval)))
    })
  )
