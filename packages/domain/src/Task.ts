/**
 * Background tasks (spec 3.3, 4.5; API-CONVENTIONS "Tasks and notifications"): lifecycle runs
 * answered 202 with a handle and polled at `GET /api/v1/tasks/{taskId}`. A task id is an opaque,
 * unguessable `tsk_…` visible only to the actor that started the run.
 */
import { Schema } from "effect"

/** What a task does. */
export const TaskType = Schema.Literals(["disconnect_all", "archive", "disconnect", "migrate_version"])
export type TaskType = typeof TaskType.Type

/**
 * spec 3.3: `active` while the workflow runs, `completed` when it reached its intended terminal
 * state, `failed` when it was cancelled, terminated or ended with an error; `unknown` when the
 * state could not be resolved.
 */
export const TaskState = Schema.Literals(["active", "completed", "failed", "unknown"])
export type TaskState = typeof TaskState.Type

/** `GET /api/v1/tasks/{taskId}`. */
export const Task = Schema.Struct({
  id: Schema.String,
  type: TaskType,
  state: TaskState,
  createdAt: Schema.String,
  updatedAt: Schema.String,
  error: Schema.optionalKey(Schema.String),
  /** Children done of the total (connections of a disconnect-all), once the total is known. */
  progress: Schema.optionalKey(
    Schema.Struct({ total: Schema.Number, done: Schema.Number }).annotate({ identifier: "TaskProgress" })
  )
}).annotate({ identifier: "Task" })
export type Task = typeof Task.Type

/** spec 8.1: lifecycle `timeoutSeconds` is greater than zero; default 600. */
export const defaultLifecycleTimeoutSeconds = 600

/** Body of `_disconnectAll` and `_archive` (optional): `{timeoutSeconds}`. */
export const StartLifecycle = Schema.Struct({
  timeoutSeconds: Schema.optionalKey(
    Schema.Int.check(
      Schema.isBetween({ minimum: 1, maximum: 86_400 }, { message: "must be an integer from 1 to 86400" })
    )
  )
}).annotate({ identifier: "StartLifecycle" })
export type StartLifecycle = typeof StartLifecycle.Type

/** The 202 answer of `POST /api/v1/connections/{id}/_disconnect`. */
export const ConnectionTaskHandle = Schema.Struct({ taskId: Schema.String, connectionId: Schema.String }).annotate({
  identifier: "ConnectionTaskHandle"
})
export type ConnectionTaskHandle = typeof ConnectionTaskHandle.Type

/** The 202 answer of `_disconnectAll` and `_archive` (spec 4.5). */
export const ConnectorTaskHandle = Schema.Struct({ taskId: Schema.String, connectorId: Schema.String }).annotate({
  identifier: "ConnectorTaskHandle"
})
export type ConnectorTaskHandle = typeof ConnectorTaskHandle.Type
