/**
 * Connector lifecycle starts and task polling (spec 3.3, 4.5, 8.1; API-CONVENTIONS "Tasks and
 * notifications"): `_disconnectAll`, `_archive` and a connection's `_disconnect` record a task (its lock refuses a second run
 * on the same connector while one is active: 409 `operation_in_progress`), start the durable
 * workflow through this process's cluster membership without waiting, and answer 202 with the
 * task handle; `GET /tasks/{taskId}` shows a task only to the actor that started it.
 */
import { ArchiveWorkflow, DisconnectAllWorkflow, DisconnectConnectionWorkflow } from "@svc/cluster/LifecycleWorkflows"
import type { DisconnectConnection } from "@svc/domain/ConnectionSetup"
import { Conflict, NotFound } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { makeId } from "@svc/domain/Ids"
import {
  type ConnectionTaskHandle,
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

const taskTypes: ReadonlyArray<TaskType> = ["disconnect_all", "archive", "disconnect", "migrate_version"]

/** A stored task's type (rows are written by this module only). */
const taskTypeOf = (type: string): TaskType => taskTypes.find((known) => known === type) ?? "disconnect_all"

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
    /** `POST /api/v1/connections/{id}/_disconnect`. */
    readonly disconnect: (
      actor: AuthenticatedActor,
      connectionId: string,
      body: DisconnectConnection
    ) => Effect.Effect<ConnectionTaskHandle, ResourceError>
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

        /** Starts a task's workflow without waiting; one that cannot start ends its task failed (freeing its lock). */
        const launch = (
          taskId: string,
          what: string,
          started: Effect.Effect<string, never, WorkflowEngine.WorkflowEngine>
        ) =>
          started.pipe(
            Effect.provide(context),
            Effect.asVoid,
            Effect.catchCause((cause) =>
              Effect.andThen(
                Effect.logError(`could not start the ${what}`, cause),
                Effect.orDie(
                  Effect.flatMap(Clock.currentTimeMillis, (at) =>
                    tasks.finish(taskId, "failed", "the workflow could not be started", new Date(at))
                  )
                )
              )
            )
          )

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
            yield* launch(
              taskId,
              `${type} of connector ${connector.id}`,
              type === "archive"
                ? ArchiveWorkflow.execute(payload, { discard: true })
                : DisconnectAllWorkflow.execute({ ...payload, finishTask: true }, { discard: true })
            )
            return { taskId, connectorId: connector.id }
          })

        const disconnect = Effect.fn("Lifecycle.disconnect")(function* (
          actor: AuthenticatedActor,
          connectionId: string,
          body: DisconnectConnection
        ) {
          const connection = yield* ops.load(actor, Kinds.connections, connectionId, "disconnect")
          const now = yield* Clock.currentTimeMillis
          const taskId = makeId("tsk")
          const payload = {
            taskId,
            connectionId: connection.id,
            deadline: now + (body.timeoutSeconds ?? defaultLifecycleTimeoutSeconds) * 1000,
            finishTask: true
          }
          // The connection is `disconnecting` in the same write as its task, before the 202: a
          // migration started after the answer sees it (409 connection_disconnecting).
          const created = yield* Effect.orDie(
            tasks.createDisconnect({
              id: taskId,
              type: "disconnect",
              actorId: actor.id,
              subjectId: connection.id,
              lockKey: `connection:${connection.id}`,
              executionId: yield* DisconnectConnectionWorkflow.executionId(payload),
              now: new Date(now)
            })
          )
          if (created === "Locked") {
            return yield* new Conflict({
              error: `a disconnect of connection ${connection.id} is running; poll its task`,
              code: "operation_in_progress"
            })
          }
          yield* Effect.orDie(tasks.setTotal(taskId, 1, new Date(now)))
          yield* launch(
            taskId,
            `disconnect of connection ${connection.id}`,
            DisconnectConnectionWorkflow.execute(payload, { discard: true })
          )
          return { taskId, connectionId: connection.id }
        })

        const task = Effect.fn("Lifecycle.task")(function* (actor: AuthenticatedActor, taskId: string) {
          const found = yield* Effect.orDie(tasks.find(taskId))
          // Visible only to the actor that started it (API-CONVENTIONS): anyone else gets 404.
          if (Option.isNone(found) || found.value.actorId !== actor.id) return yield* notFound(taskId)
          const row = found.value
          return {
            id: row.id,
            type: taskTypeOf(row.type),
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
          disconnect,
          task
        })
      })
    )
}
