/**
 * Shared pieces of the admin UI: the API bound to the admin session's XSRF cookie, a loader hook,
 * the task-polling hook with its progress view, and small presentational helpers.
 */
import type { Task } from "@svc/domain/Task"
import type { ComponentChildren } from "preact"
import { useEffect, useState } from "preact/hooks"
import { ApiError, describeError, makeApi } from "../shared/api.ts"
import { Alert } from "../shared/components.tsx"
import { adminApi } from "./adminApi.ts"

export const api = makeApi("svc_admin_xsrf")

/** What {@link useLoad} answers. */
export interface Loaded<T> {
  readonly data: T | undefined
  readonly error: string | undefined
  readonly loading: boolean
  readonly reload: () => void
}

/** Runs `load` on mount and whenever `deps` change; `reload` runs it again. */
export const useLoad = <T,>(load: () => Promise<T>, deps: ReadonlyArray<unknown>): Loaded<T> => {
  const [data, setData] = useState<T | undefined>()
  const [error, setError] = useState<string | undefined>()
  const [loading, setLoading] = useState(true)
  const [tick, setTick] = useState(0)
  useEffect(() => {
    let live = true
    setLoading(true)
    load()
      .then((value) => {
        if (!live) return
        setData(value)
        setError(undefined)
      })
      .catch((e: unknown) => live && setError(describeError(e)))
      .finally(() => live && setLoading(false))
    return () => {
      live = false
    }
  }, [...deps, tick])
  return { data, error, loading, reload: () => setTick((t) => t + 1) }
}

const pollTask = async (taskId: string, onUpdate: (task: Task) => void): Promise<Task> => {
  const deadline = Date.now() + 15 * 60_000
  for (;;) {
    const task = await adminApi.getTask(taskId)
    onUpdate(task)
    if (task.state === "completed" || task.state === "failed" || Date.now() > deadline) return task
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

/** What {@link useTask} answers. */
export interface TaskRun {
  /** The task as last read, with the label it was started under. */
  readonly current: { readonly label: string; readonly task: Task } | undefined
  readonly running: boolean
  /** Starts a task with `start`, then polls `/api/v1/tasks/{id}` every 500 ms until it is completed or failed. */
  readonly run: (label: string, start: () => Promise<{ readonly taskId: string }>) => Promise<Task>
}

/** The one task-polling hook of the admin UI: every screen that starts a task shows its progress through it. */
export const useTask = (): TaskRun => {
  const [current, setCurrent] = useState<{ label: string; task: Task } | undefined>()
  const [running, setRunning] = useState(false)
  const run = async (label: string, start: () => Promise<{ readonly taskId: string }>) => {
    setRunning(true)
    try {
      const started = await start()
      return await pollTask(started.taskId, (task) => setCurrent({ label, task }))
    } finally {
      setRunning(false)
    }
  }
  return { current, running, run }
}

/** A task's state and progress bar. */
export const TaskProgress = (props: { readonly label: string; readonly task: Task | undefined }) => {
  if (props.task === undefined) return null
  const { state, progress, error } = props.task
  return (
    <div class="svc-card" role="status" data-testid="task-progress">
      <div class="svc-row">
        <span class="svc-name">{props.label}</span>
        <span
          class={`svc-badge ${state === "completed" ? "svc-badge-good" : state === "failed" ? "svc-badge-bad" : "svc-badge-warn"}`}
          data-testid="task-state"
        >
          {state}
        </span>
      </div>
      {progress !== undefined && (
        <div>
          <progress max={Math.max(progress.total, 1)} value={progress.done} aria-label={`${props.label} progress`} />{" "}
          {progress.done} of {progress.total}
        </div>
      )}
      {error !== undefined && <p class="svc-field-error">{error}</p>}
    </div>
  )
}

/** An error box, or nothing. */
export const ErrorBox = (props: { readonly error: string | undefined }) => <Alert kind="error" text={props.error} />

/** `key=value` badges of a label or annotation map's user entries, and how many `svc/` labels there are. */
export const KeyValues = (props: { readonly values: Readonly<Record<string, string>> }) => {
  const entries = Object.entries(props.values)
  const user = entries.filter(([key]) => !key.startsWith("svc/"))
  const system = entries.length - user.length
  return (
    <span class="svc-row svc-tags">
      {user.map(([key, value]) => (
        <span key={key} class="svc-badge svc-mono">
          {key}={value}
        </span>
      ))}
      {system > 0 && <span class="svc-muted svc-help">+{system} svc/ labels</span>}
    </span>
  )
}

/** A labelled text input. */
export const Field = (props: {
  readonly id: string
  readonly label: string
  readonly value: string
  readonly onInput: (value: string) => void
  readonly error?: string | undefined
  readonly placeholder?: string
  readonly numeric?: boolean
}) => (
  <div class="svc-field">
    <label for={props.id}>{props.label}</label>
    <input
      id={props.id}
      type="text"
      inputMode={props.numeric ? "numeric" : "text"}
      value={props.value}
      placeholder={props.placeholder}
      aria-invalid={props.error !== undefined}
      {...(props.error === undefined ? {} : { "aria-describedby": `${props.id}-error` })}
      onInput={(e) => props.onInput(e.currentTarget.value)}
    />
    {props.error !== undefined && (
      <p class="svc-field-error" id={`${props.id}-error`}>
        {props.error}
      </p>
    )}
  </div>
)

/** A titled card. */
/**
 * A table's header row: one column header per name, then an unlabelled-on-screen "Actions"
 * column for the row buttons (still named for screen readers).
 */
export const TableHead = (props: { readonly columns: ReadonlyArray<string> }) => (
  <thead>
    <tr>
      {props.columns.map((column) => (
        <th key={column} scope="col">
          {column}
        </th>
      ))}
      <th scope="col">
        <span class="svc-visually-hidden">Actions</span>
      </th>
    </tr>
  </thead>
)

/** The last cell of a list row: the button that opens the item named `name`. */
export const OpenCell = (props: { readonly name: string; readonly onOpen: () => void }) => (
  <td>
    <button type="button" class="svc-button" aria-label={`Open ${props.name}`} onClick={props.onOpen}>
      Open
    </button>
  </td>
)

export const Card = (props: { readonly title: string; readonly children: ComponentChildren }) => (
  <section class="svc-card" aria-label={props.title}>
    <h2>{props.title}</h2>
    {props.children}
  </section>
)

/** True for a failed call that says the session is gone. */
export const isSignedOut = (error: unknown): boolean => error instanceof ApiError && error.status === 401
