/**
 * The lifecycle group (issue 17): disconnect-all throughput on PostgreSQL. A fresh database
 * (`svc_bench_lifecycle_<random>`, dropped at the end), `svc migrate`, one `svc serve --service
 * worker` (runs the workflows) and one `svc serve --service api` (starts them and answers the task
 * polls). Per run: a fresh connector (auth `none`, so the children do no outbound call) with 1,000
 * connections created through the api (16 in flight), then `POST …/_disconnectAll` and
 * `GET /api/v1/tasks/{taskId}` every 100 ms until the task ends; the time from the POST to the poll
 * that saw it completed, and connections per second. Each run is checked: `completed`, progress
 * 1000/1000, no live connection left. Skipped with a reason when PostgreSQL is unreachable; every
 * process is tracked for cleanup and the database is dropped at the end.
 */
import { randomBytes } from "node:crypto"
import type { RunningSvc } from "../support/SvcProcess.ts"
import { createDatabase, DatabaseUnavailable } from "./Cluster.ts"
import { opsApi, opsWorkspace, startOpsCluster } from "./OpsApi.ts"
import { nowMs } from "./Ready.ts"

/**
 * Seconds the group may take at most: its own budget of 100 s (the runs), set-up and clean-up.
 * Measured: 35-55 s in all (set-up ~5 s, 2 runs of 10-25 s each with their creation).
 */
export const lifecycleBudgetS = 120

/** Connections per run, created through the api before each disconnect-all. */
const connectionCount = 1_000
/** Connection creations in flight at once. */
const createConcurrency = 16
/** How often the task is polled: the resolution of the measured time. */
const pollEveryMs = 100

export interface LifecycleOptions {
  readonly quick: boolean
  readonly progress: (message: string) => void
}

export interface DisconnectAllRun {
  readonly connections: number
  /** Creating the connections through the api, 16 in flight. */
  readonly createMs: number
  /** From the `_disconnectAll` POST to the first poll that saw the task ended. */
  readonly ms: number
  readonly perSecond: number
  /** From the POST to the first poll that showed the progress total (the list activity done). */
  readonly listedMs?: number
  readonly state: string
  readonly progress?: { readonly total: number; readonly done: number }
  /** Connections the api still lists for the connector afterwards (0 expected). */
  readonly liveAfter: number
}

export interface LifecycleReport {
  readonly title: string
  /** Why the group was not (fully) measured; starts with `failed: ` when it broke. */
  readonly skipped?: string
  readonly setup?: { readonly migrateMs: number; readonly processesReadyMs: number }
  readonly runs: ReadonlyArray<DisconnectAllRun>
  readonly runsWanted: number
  readonly notes: ReadonlyArray<string>
  readonly ms: number
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export const measureLifecycle = async (options: LifecycleOptions): Promise<LifecycleReport> => {
  const { progress, quick } = options
  const runsWanted = quick ? 1 : 2
  const budgetMs = 100_000
  const t0 = nowMs()
  const remaining = () => budgetMs - (nowMs() - t0)
  const title = `lifecycle on PostgreSQL: disconnect-all of ${connectionCount} connections (1 worker, 1 api process)`
  const runs: Array<DisconnectAllRun> = []
  const notes: Array<string> = []
  let setup: LifecycleReport["setup"]
  const report = (skipped?: string): LifecycleReport => ({
    title,
    ...(skipped === undefined ? {} : { skipped }),
    ...(setup === undefined ? {} : { setup }),
    runs,
    runsWanted,
    notes,
    ms: nowMs() - t0
  })

  let database: Awaited<ReturnType<typeof createDatabase>>
  try {
    database = await createDatabase("svc_bench_lifecycle_")
  } catch (error) {
    const reason = error instanceof DatabaseUnavailable ? error.message : `failed: ${describe(error)}`
    progress(`${title}: skipped (${reason})`)
    return report(reason)
  }
  progress(`${title}: database ${database.name}`)
  const processes: Array<RunningSvc> = []
  try {
    const { dir, secret, migrateMs } = await opsWorkspace(
      "svc-bench-lifecycle-",
      [`database: { provider: postgres, url: "${database.url}", max_connections: 4 }`],
      30_000
    )

    const startingAt = nowMs()
    const origin = await startOpsCluster(dir, processes)
    setup = { migrateMs, processesReadyMs: nowMs() - startingAt }
    progress(
      `  migrated in ${(migrateMs / 1000).toFixed(1)} s; worker and api ready after ` +
        `${(setup.processesReadyMs / 1000).toFixed(1)} s`
    )

    const { call, expect } = await opsApi(origin, secret, 30_000)

    for (let run = 1; run <= runsWanted; run++) {
      // a run takes 10-25 s here; one that would not fit in the budget is not started
      if (run > 1 && remaining() < 40_000) {
        notes.push(`time budget of ${budgetMs / 1000} s reached: ${runsWanted - run + 1} run(s) not taken`)
        progress(`${title}: ${notes[notes.length - 1]}`)
        break
      }
      const ns = `root.lifecycle${randomBytes(4).toString("hex")}`
      await expect(call("POST", "/api/v1/namespaces", { path: ns }), 201, "create the namespace")
      const connector = await expect<{ id: string }>(
        call("POST", "/api/v1/connectors", { namespace: ns, definition: { type: "demo", auth: { type: "none" } } }),
        201,
        "create the connector"
      )
      await expect(
        call("PUT", `/api/v1/connectors/${connector.id}/versions/1/_state`, { state: "primary" }),
        200,
        "publish the connector"
      )
      progress(`${title}: run ${run}: creating ${connectionCount} connections (${createConcurrency} in flight)`)
      const creating = nowMs()
      let next = 0
      await Promise.all(
        Array.from({ length: createConcurrency }, async () => {
          while (next < connectionCount) {
            next++
            await expect(call("POST", "/api/v1/connections", { connectorId: connector.id }), 201, "create a connection")
          }
        })
      )
      const createMs = nowMs() - creating
      progress(`  created in ${(createMs / 1000).toFixed(1)} s; disconnect-all`)

      const started = nowMs()
      const handle = await expect<{ taskId: string }>(
        call("POST", `/api/v1/connectors/${connector.id}/_disconnectAll`, { timeoutSeconds: 600 }),
        202,
        "_disconnectAll"
      )
      type Task = { state: string; progress?: { total: number; done: number } }
      let task: Task | undefined
      let listedMs: number | undefined
      const deadline = started + Math.max(30_000, remaining())
      for (;;) {
        task = await expect<Task>(call("GET", `/api/v1/tasks/${handle.taskId}`), 200, "poll the task")
        if (listedMs === undefined && task.progress !== undefined) listedMs = nowMs() - started
        if (task.state !== "active" || nowMs() > deadline) break
        await sleep(pollEveryMs)
      }
      const ms = nowMs() - started
      if (task.state === "active") throw new Error(`the task is still active after ${(ms / 1000).toFixed(0)} s`)
      const live = await expect<{ items: ReadonlyArray<unknown> }>(
        call("GET", `/api/v1/connections?${new URLSearchParams({ connectorId: connector.id, limit: "100" })}`),
        200,
        "list the connections left"
      )
      const result: DisconnectAllRun = {
        connections: connectionCount,
        createMs,
        ms,
        perSecond: (connectionCount * 1000) / ms,
        ...(listedMs === undefined ? {} : { listedMs }),
        state: task.state,
        ...(task.progress === undefined ? {} : { progress: task.progress }),
        liveAfter: live.items.length
      }
      runs.push(result)
      progress(
        `  ${task.state} in ${(ms / 1000).toFixed(1)} s: ${result.perSecond.toFixed(0)} connections/s ` +
          `(progress ${task.progress?.done}/${task.progress?.total}, ${result.liveAfter} live left)`
      )
      const wrong =
        task.state !== "completed" ||
        task.progress?.total !== connectionCount ||
        task.progress.done !== connectionCount ||
        result.liveAfter !== 0
      if (wrong) return report(`failed: run ${run} ended ${JSON.stringify(task)} with ${result.liveAfter} live left`)
    }
    return report()
  } catch (error) {
    const reason = `failed: ${describe(error)}`
    progress(`${title}: ${reason}`)
    return report(reason)
  } finally {
    await Promise.all(processes.map((p) => p.stop("SIGKILL")))
    await database.drop().catch((error: unknown) => progress(`dropping ${database.name}: ${describe(error)}`))
  }
}

/** The group's lines of the printed table. */
export const formatLifecycle = (report: LifecycleReport): ReadonlyArray<string> => {
  const out = ["", report.title]
  if (report.skipped !== undefined && report.setup === undefined) {
    return [...out, `  skipped: ${report.skipped.split("\n")[0]?.slice(0, 160) ?? ""}`]
  }
  const s = report.setup
  if (s !== undefined) {
    out.push(
      `  set-up: svc migrate ${(s.migrateMs / 1000).toFixed(1)} s; worker and api process ready ` +
        `${(s.processesReadyMs / 1000).toFixed(1)} s`
    )
  }
  if (report.runs.length > 0) {
    out.push(
      `  POST _disconnectAll -> task completed (polled every ${pollEveryMs} ms); connections created through the api first`,
      `    ${"run".padEnd(5)}${"connections".padStart(12)}${"total s".padStart(10)}${"conn/s".padStart(9)}` +
        `${"listed ms".padStart(11)}${"progress".padStart(12)}${"live left".padStart(11)}${"create s".padStart(10)}` +
        `${"created/s".padStart(11)}`
    )
    for (const [i, r] of report.runs.entries()) {
      const progress = r.progress === undefined ? "-" : `${r.progress.done}/${r.progress.total}`
      out.push(
        `    ${String(i + 1).padEnd(5)}${String(r.connections).padStart(12)}${(r.ms / 1000).toFixed(1).padStart(10)}` +
          `${r.perSecond.toFixed(0).padStart(9)}${(r.listedMs === undefined ? "-" : r.listedMs.toFixed(0)).padStart(11)}` +
          `${progress.padStart(12)}${String(r.liveAfter).padStart(11)}${(r.createMs / 1000).toFixed(1).padStart(10)}` +
          `${((r.connections * 1000) / r.createMs).toFixed(0).padStart(11)}`
      )
    }
  }
  for (const note of report.notes) out.push(`  note: ${note}`)
  if (report.skipped !== undefined) out.push(`  ${report.skipped.split("\n")[0]?.slice(0, 160) ?? ""}`)
  return out
}
