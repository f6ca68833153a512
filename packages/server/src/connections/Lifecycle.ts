/**
 * Connector lifecycle starts and task polling (spec 3.3, 4.5, 8.1; API-CONVENTIONS "Tasks and
 * notifications"): `_disconnectAll` and `_archive` record a task (its lock refuses a second run
 * on the same connector while one is active: 409 `operation_in_progress`), start the durable
 * workflow through this process's cluster membership without waiting, and answer 202 with the
 * task handle; `GET /tasks/{taskId}` shows a task only to the actor that started it.
 */
import { ArchiveWorkflow, DisconnectAllWorkflow } from "@svc/cluster/LifecycleWorkflows"
import { Conflict, NotFound } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { makeId } from "@svc/domain/Ids"
import {
  type ConnectorTaskHandle,
  defaultLifecycleTimeoutSeconds,
  type StartLifecycle,
  type Task,
  type TaskType
} from "@svc/domain/Task"
import { TaskRepo } from "@svc/sql/TaskRepo"
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { WorkflowEngine } from "effect/workflow"
import * as Kinds from "../resources/ResourceKinds.ts"
import { type ResourceError, ResourceOps } from "../resources/ResourceOps.ts"

const inProgress = (connectorId: string) =>
  new Conflict({
    error: `a disconnect-all or archive of connector ${connectorId} is running; poll its task and retry once it ended`,
    code: "operation_in_progress"
  })

const notFound = (taskId: string) => new NotFound({ error: `task ${taskId} not found`, code: "not_found" })

export class Lifecycle extends Context.Service<
  Lifecycle,
  {
    /** `POST /api/v1/connectors/{id}/_disconnectAll`. */
    readonly disconnectAll: (
      actor: AuthenticatedActor,
      connectorId: string,
      body: StartLifecycle
    ) => Effect.Effect<ConnectorTaskHandle, ResourceError>
    /** `POST /api/v1/connectors/{id}/_archive`. */
    readonly archive: (
      actor: AuthenticatedActor,
      connectorId: string,
      body: StartLifecycle
    ) => Effect.Effect<ConnectorTaskHandle, ResourceError>
    /** `GET /api/v1/tasks/{taskId}`. */
    readonly task: (actor: AuthenticatedActor, taskId: string) => Effect.Effect<Task, ResourceError>
  }
>()("@svc/server/Lifecycle") {
  static readonly layerNoDeps: Layer.Layer<Lifecycle, never, ResourceOps | TaskRepo | WorkflowEngine.WorkflowEngine> =
    Layer.effect(
      Lifecycle,
      Effect.gen(function* () {
        const ops = yield* ResourceOps
        const tasks = yield* TaskRepo
        const context = yield* Effect.context<WorkflowEngine.WorkflowEngine>()

        const start = (type: TaskType, verb: string) =>
          Effect.fnUntraced(function* (actor: AuthenticatedActor, connectorId: string, body: StartLifecycle) {
            const connector = yield* ops.load(actor, Kinds.connectors, connectorId, verb)
            const now = yield* Clock.currentTimeMillis
            const deadline = now + (body.timeoutSeconds ?? defaultLifecycleTimeoutSeconds) * 1000
            const taskId = makeId("tsk")
            const payload = { taskId, connectorId: connector.id, deadline }
            const executionId =
              type === "archive"
                ? yield* ArchiveWorkflow.executionId(payload)
                : yield* DisconnectAllWorkflow.executionId({ ...payload, finishTask: true })
            const created = yield* Effect.orDie(
              tasks.create({
                id: taskId,
                type,
                actorId: actor.id,
                subjectId: connector.id,
                // spec 4.5: archive and disconnect-all of one connector exclude each other
                lockKey: `connector:${connector.id}`,
                executionId,
                now: new Date(now)
              })
            )
            if (created === "Locked") return yield* inProgress(connector.id)
            const started =
              type === "archive"
                ? ArchiveWorkflow.execute(payload, { discard: true })
                : DisconnectAllWorkflow.execute({ ...payload, finishTask: true }, { discard: true })
            yield* started.pipe(
              Effect.provide(context),
              Effect.catchCause((cause) =>
                // Never started: the task ends failed and frees its lock.
                Effect.andThen(
                  Effect.logError(`could not start ${type} of connector ${connector.id}`, cause),
                  Effect.orDie(
                    Effect.flatMap(Clock.currentTimeMillis, (at) =>
                      tasks.finish(taskId, "failed", "the workflow could not be started", new Date(at))
                    )
                  )
                )
              )
            )
            return { taskId, connectorId: connector.id }
          })

        const task = Effect.fn("Lifecycle.task")(function* (actor: AuthenticatedActor, taskId: string) {
          const found = yield* Effect.orDie(tasks.find(taskId))
          // Visible only to the actor that started it (API-CONVENTIONS): anyone else gets 404.
          if (Option.isNone(found) || found.value.actorId !== actor.id) return yield* notFound(taskId)
          const row = found.value
          return {
            id: row.id,
            type: row.type === "archive" ? "archive" : "disconnect_all",
            state: row.state,
            createdAt: row.createdAt.toISOString(),
            updatedAt: row.updatedAt.toISOString(),
            ...(row.error === null ? {} : { error: row.error }),
            ...(row.progressTotal === null
              ? {}
              : { progress: { total: row.progressTotal, done: Math.min(row.progressDone, row.progressTotal) } })
          } satisfies Task
        })

        return Lifecycle.of({
          disconnectAll: start("disconnect_all", "disconnect_all"),
          archive: start("archive", "archive"),
          task
        })
      })
    )
}
