/**
 * `cli tasks get <taskId> [--wait]` (spec 3.3, 4.5): the state of a background task; with `--wait`,
 * polls until it is no longer `active`, a progress bar on stderr, exit 8 when it did not complete.
 */
import { Console, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import type { Task } from "@svc/domain/Task"
import { apiFlags, connectApi, validateApiFlags } from "../ApiClient.ts"
import { ApiFailure, toApiFailure } from "../ApiFailure.ts"
import { formatTable, outputFlag, shortTime } from "../Output.ts"
import { intervalFlag } from "../PollInterval.ts"
import { progressBar, progressLine } from "../Progress.ts"
import { root } from "../Root.ts"

/** Poll interval of `--wait` unless `--interval` is given. */
export const defaultTaskIntervalMs = 1_000

/** The one-line state of a task while waiting: a bar once the total is known. */
export const taskProgressText = (task: Task): string =>
  task.progress === undefined
    ? `task ${task.id} (${task.type}): ${task.state}`
    : `${progressBar(task.progress.done, task.progress.total)} ${task.type} ${task.state}`

/** The task as `KEY  value` lines (`-o table`). */
export const taskTable = (task: Task): Array<string> =>
  formatTable(
    [
      { header: "FIELD", value: (row: readonly [string, string]) => row[0] },
      { header: "VALUE", value: (row: readonly [string, string]) => row[1] }
    ],
    [
      ["id", task.id],
      ["type", task.type],
      ["state", task.state],
      ...(task.progress === undefined ? [] : [["progress", `${task.progress.done}/${task.progress.total}`] as const]),
      ...(task.error === undefined ? [] : [["error", task.error] as const]),
      ["created", shortTime(task.createdAt)],
      ["updated", shortTime(task.updatedAt)]
    ],
    // a detail view: the error text is shown whole, wrapped by the terminal, never cut
    { maxWidth: Number.MAX_SAFE_INTEGER }
  ).slice(1)

/** The failure of a waited-for task that did not complete, or `undefined` when it completed. */
export const taskOutcomeFailure = (task: Task): ApiFailure | undefined =>
  task.state === "failed"
    ? new ApiFailure({
        kind: "taskFailed",
        message: `task ${task.id} (${task.type}) failed${task.error === undefined ? "" : `: ${task.error}`}`
      })
    : task.state === "unknown"
      ? new ApiFailure({
          kind: "taskFailed",
          message: `task ${task.id} (${task.type}): the server could not resolve its state (unknown)`
        })
      : undefined

const get = Command.make(
  "get",
  {
    taskId: Argument.String("taskId").pipe(Argument.withDescription("The task id (tsk_…) a lifecycle call answered")),
    wait: Flag.Boolean("wait").pipe(
      Flag.withoutNegation,
      Flag.withDefault(false),
      Flag.withDescription(
        "Poll until the task is no longer active (an unreachable api is retried), a progress bar on stderr; exit 8 if it failed or is unknown"
      )
    ),
    interval: intervalFlag("Poll interval with --wait", defaultTaskIntervalMs),
    output: outputFlag(["json", "table"], "json"),
    ...apiFlags
  },
  Effect.fn("TasksGet")(function* (flags) {
    const { config } = yield* root
    const { client, target } = yield* connectApi(flags, config)
    const fetch = client.tasks
      .get({ params: { taskId: flags.taskId } })
      .pipe(Effect.mapError(toApiFailure(target.apiUrl, `get task ${flags.taskId}`)))
    let task = yield* fetch
    if (flags.wait) {
      const progress = yield* progressLine
      while (task.state === "active") {
        yield* progress.update(taskProgressText(task))
        yield* Effect.sleep(flags.interval)
        // A restarting api does not end the wait: the task runs on in the workers.
        task = yield* fetch.pipe(
          Effect.catchIf(
            (error) => error.kind === "unreachable",
            (error) => Effect.as(progress.update(`${error.message}; retrying`), task)
          )
        )
      }
      yield* progress.finish(taskProgressText(task))
    }
    if (flags.output === "json") yield* Console.log(JSON.stringify(task, null, 2))
    else for (const line of taskTable(task)) yield* Console.log(line)
    if (flags.wait) {
      const failure = taskOutcomeFailure(task)
      if (failure !== undefined) return yield* failure
    }
  })
).pipe(
  Command.validate((flags) => validateApiFlags(flags)),
  Command.withDescription("Show a background task (disconnect-all, archive, disconnect); --wait follows it to the end"),
  Command.withExamples([
    { command: "cli tasks get tsk_abc123", description: "The task's state and progress as JSON" },
    {
      command: "cli tasks get tsk_abc123 --wait -o table",
      description: "Wait with a progress bar; exit 0 when completed, 8 when failed"
    }
  ])
)

/** `cli tasks get`. */
export const tasks = Command.make("tasks").pipe(
  Command.withDescription("Background tasks started by lifecycle calls (spec 4.5)"),
  Command.withExamples([{ command: "cli tasks get tsk_abc123 --wait", description: "Follow a task to its end" }]),
  Command.withSubcommands([get])
)
