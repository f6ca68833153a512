/**
 * The migration group (issue 18 item 7).
 *
 * 1. Hook execution: `HookSandbox.run` in this process — a fresh QuickJS runtime and context per
 *    hook, the version's shared javascript, the hook expression, the output validated against
 *    `HookResult` — one hook at a time (p50/p99 latency) and with the pool saturated (hooks/s).
 * 2. Migrations per second on PostgreSQL: a fresh database (`svc_bench_migration_<random>`,
 *    dropped at the end), `svc migrate`, one `svc serve --service worker` (the workflows and the
 *    hook pool) and one `svc serve --service api`. 1,000 connections (200 with --quick) on v1 of
 *    a connector whose v2 renames a configuration key in its up hook and back in its down hook;
 *    `_migrate_version` for every connection (32 starts in flight) to v2, then back to v1; each
 *    direction's time runs from the first POST until the database shows every task ended.
 *    Every run is checked: every task `completed`, every connection on the target version.
 * Skipped with a reason when PostgreSQL is unreachable; every process is tracked for cleanup.
 */
import { randomBytes } from "node:crypto"
import * as os from "node:os"
import * as PgClient from "@svc/sql/PgClient"
import { HookSandbox } from "@svc/server/hooks/HookSandbox"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { SqlClient } from "effect/sql"
import type { RunningSvc } from "../support/SvcProcess.ts"
import { createDatabase, DatabaseUnavailable } from "./Cluster.ts"
import { opsApi, opsWorkspace, startOpsCluster } from "./OpsApi.ts"
import { nowMs } from "./Ready.ts"

/**
 * Seconds the group may take at most (set-up, the hook rows, two directions over 1,000
 * connections with their creation, clean-up).
 */
export const migrationBudgetS = 300

const createConcurrency = 16
const startConcurrency = 32
const pollEveryMs = 200

export interface MigrationOptions {
  readonly quick: boolean
  readonly progress: (message: string) => void
}

export interface HookRow {
  readonly name: string
  readonly n: number
  readonly p50Ms?: number
  readonly p99Ms?: number
  readonly maxMs?: number
  readonly perSecond?: number
}

export interface MigrationRun {
  readonly direction: string
  readonly connections: number
  /** From the first `_migrate_version` POST until every task ended. */
  readonly ms: number
  /** Time spent answering the 202s (32 in flight). */
  readonly startMs: number
  readonly perSecond: number
  readonly completed: number
  readonly failed: number
}

/** Migrations started one at a time, each waited for: the latency of the 202 and of the whole task. */
export interface SerialRow {
  readonly n: number
  readonly startP50Ms: number
  readonly startMaxMs: number
  readonly taskP50Ms: number
  readonly taskMaxMs: number
}

export interface MigrationReport {
  readonly title: string
  readonly serial?: SerialRow
  readonly skipped?: string
  readonly hooks: ReadonlyArray<HookRow>
  readonly poolSize: number
  readonly createMs?: number
  readonly runs: ReadonlyArray<MigrationRun>
  readonly notes: ReadonlyArray<string>
  readonly ms: number
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN

/** A realistic migration hook: reshapes configuration, labels, annotations, raises or clears a notice. */
export const hookInput = {
  javascript: `
function migrate(cfg, labels, annotations) {
  const endpoints = (cfg.endpoints || []).map((e) => ({ url: e.url.replace("http:", "https:"), weight: e.weight || 1 }))
  return {
    config: { set: { region: cfg.region || "us", endpoints, api_version: 2 }, unset: ["legacy_host"] },
    labels: { set: { tier: labels.tier === "gold" ? "platinum" : "silver", migrated: "v2" } },
    annotations: { set: { "example.com/migrated-by": "hook" } },
    notifications: cfg.scopes && cfg.scopes.includes("write")
      ? { unset: [{ key: "scopes.missing" }] }
      : { set: [{ key: "scopes.missing", level: "warning", title: "Grant write access", action_url: "/connections/x?action=reauth" }] }
  }
}
`,
  hook: "migrate(cfg, labels, annotations)",
  cfg: {
    region: "eu",
    token: "secret-token-value",
    legacy_host: "old.example.com",
    scopes: ["read"],
    endpoints: Array.from({ length: 10 }, (_, i) => ({ url: `http://api${i}.example.com/v1`, weight: i }))
  },
  labels: { tier: "gold", team: "payments" },
  annotations: { "example.com/owner": "someone@example.com" }
}

/** The hook rows: sequential latency of a realistic and an empty hook, and pooled throughput. */
export const measureHooks = (measured: number, poolSize: number): Promise<ReadonlyArray<HookRow>> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.provide(
        Effect.gen(function* () {
          const sandbox = yield* HookSandbox
          const warmup = Math.min(200, measured)
          for (let i = 0; i < warmup; i++) yield* sandbox.run({ ...hookInput, seed: `w${i}` })
          const timed = function* (run: () => Effect.Effect<unknown, unknown>, n: number) {
            const latencies: Array<number> = []
            for (let i = 0; i < n; i++) {
              const start = nowMs()
              yield* run()
              latencies.push(nowMs() - start)
            }
            return latencies.sort((a, b) => a - b)
          }
          const row = (name: string, sorted: ReadonlyArray<number>): HookRow => ({
            name,
            n: sorted.length,
            p50Ms: percentile(sorted, 50),
            p99Ms: percentile(sorted, 99),
            maxMs: sorted.at(-1) ?? Number.NaN
          })
          let i = 0
          const migration = yield* timed(() => sandbox.run({ ...hookInput, seed: `m${i++}` }), measured)
          const empty = yield* timed(
            () => sandbox.run({ hook: "({})", cfg: {}, labels: {}, annotations: {}, seed: "t" }),
            Math.min(measured, 1000)
          )
          const start = nowMs()
          yield* Effect.forEach(
            Array.from({ length: measured }, (_, k) => k),
            (k) => sandbox.run({ ...hookInput, seed: `c${k}` }),
            { concurrency: poolSize * 2, discard: true }
          )
          const elapsed = nowMs() - start
          return [
            row("migration hook, one at a time", migration),
            row("empty hook ({}), one at a time", empty),
            {
              name: `migration hook, pool of ${poolSize} saturated`,
              n: measured,
              perSecond: (measured * 1000) / elapsed
            }
          ]
        }),
        HookSandbox.layer({ poolSize })
      )
    )
  )

/** A client of the bench database, open until `close`. */
const openSql = async (url: string) => {
  const scope = await Effect.runPromise(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(PgClient.layer({ url, poolSize: 1 }), scope))
  const sql = Context.get(context, SqlClient.SqlClient)
  return {
    /** Tasks among `ids` by state. */
    states: async (ids: ReadonlyArray<string>) => {
      const rows = await Effect.runPromise(
        sql<{ readonly state: string; readonly n: number }>`
          SELECT state, COUNT(*)::int AS n FROM tasks WHERE id IN ${sql.in(ids)} GROUP BY state`
      )
      return Object.fromEntries(rows.map((row) => [row.state, row.n])) as Record<string, number>
    },
    /** Live connections of the connector by version. */
    versions: async (connectorId: string) => {
      const rows = await Effect.runPromise(
        sql<{ readonly connectorVersion: number; readonly n: number }>`
          SELECT connector_version, COUNT(*)::int AS n FROM connections
          WHERE connector_id = ${connectorId} AND deleted_at IS NULL GROUP BY connector_version`
      )
      return Object.fromEntries(rows.map((row) => [row.connectorVersion, row.n])) as Record<number, number>
    },
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const definition = (version: 1 | 2) => ({
  type: "demo",
  auth: { type: "none" },
  setup_flow: {
    configure: {
      steps: [
        {
          id: "basics",
          json_schema: {
            type: "object",
            properties: version === 1 ? { host: { type: "string" } } : { base_url: { type: "string" } },
            additionalProperties: false
          }
        }
      ]
    }
  },
  ...(version === 2
    ? {
        migrations: {
          up: {
            javascript: `({ config: { set: { base_url: "https://" + cfg.host }, unset: ["host"] }, labels: { set: { schema: "v2" } } })`
          },
          down: {
            javascript: `({ config: { set: { host: cfg.base_url.slice(8) }, unset: ["base_url"] }, labels: { unset: ["schema"] } })`
          }
        }
      }
    : {})
})

export const measureMigration = async (options: MigrationOptions): Promise<MigrationReport> => {
  const { progress, quick } = options
  const connectionCount = quick ? 200 : 1_000
  const t0 = nowMs()
  const poolSize = Math.min(4, Math.max(1, os.availableParallelism()))
  const title = `migration: hook sandbox (in process) and _migrate_version of ${connectionCount} connections on PostgreSQL (1 worker, 1 api process)`
  const runs: Array<MigrationRun> = []
  const notes: Array<string> = []
  let hooks: ReadonlyArray<HookRow> = []
  let createMs: number | undefined
  let serial: SerialRow | undefined
  const report = (skipped?: string): MigrationReport => ({
    title,
    ...(serial === undefined ? {} : { serial }),
    ...(skipped === undefined ? {} : { skipped }),
    hooks,
    poolSize,
    ...(createMs === undefined ? {} : { createMs }),
    runs,
    notes,
    ms: nowMs() - t0
  })

  progress(`${title}: hook rows`)
  try {
    hooks = await measureHooks(quick ? 300 : 2_000, poolSize)
  } catch (error) {
    return report(`failed: the hook rows: ${describe(error)}`)
  }

  let database: Awaited<ReturnType<typeof createDatabase>>
  try {
    database = await createDatabase("svc_bench_migration_")
  } catch (error) {
    const reason = error instanceof DatabaseUnavailable ? error.message : `failed: ${describe(error)}`
    progress(`${title}: skipped (${reason})`)
    return report(reason)
  }
  progress(`${title}: database ${database.name}`)
  const processes: Array<RunningSvc> = []
  let db: Awaited<ReturnType<typeof openSql>> | undefined
  try {
    const { dir, secret } = await opsWorkspace(
      "svc-bench-migration-",
      [`database: { provider: postgres, url: "${database.url}", max_connections: 8 }`],
      30_000
    )
    const origin = await startOpsCluster(dir, processes)
    db = await openSql(database.url)

    const { call, expect } = await opsApi(origin, secret, 60_000)
    const inFlight = async <A>(items: ReadonlyArray<A>, limit: number, f: (item: A) => Promise<void>) => {
      let next = 0
      await Promise.all(
        Array.from({ length: limit }, async () => {
          while (next < items.length) await f(items[next++]!)
        })
      )
    }

    const ns = `root.migration${randomBytes(4).toString("hex")}`
    await expect(call("POST", "/api/v1/namespaces", { path: ns }), 201, "create the namespace")
    const connector = await expect<{ id: string }>(
      call("POST", "/api/v1/connectors", { namespace: ns, definition: definition(1) }),
      201,
      "create the connector"
    )
    await expect(
      call("PUT", `/api/v1/connectors/${connector.id}/versions/1/_state`, { state: "primary" }),
      200,
      "publish v1"
    )
    progress(`  creating ${connectionCount} connections (${createConcurrency} in flight)`)
    const ids: Array<string> = []
    const creating = nowMs()
    await inFlight(
      Array.from({ length: connectionCount }, (_, i) => i),
      createConcurrency,
      async (i) => {
        const created = await expect<{ id: string }>(
          call("POST", "/api/v1/connections", {
            connectorId: connector.id,
            configuration: { host: `api${i}.example.com` }
          }),
          201,
          "create a connection"
        )
        ids.push(created.id)
      }
    )
    createMs = nowMs() - creating
    await expect(
      call("POST", `/api/v1/connectors/${connector.id}/versions`, { definition: definition(2) }),
      201,
      "add v2"
    )
    await expect(
      call("PUT", `/api/v1/connectors/${connector.id}/versions/2/_state`, { state: "primary" }),
      200,
      "publish v2"
    )

    // One at a time, on connections of their own: the latency of one start and one whole run.
    const serialCount = quick ? 5 : 20
    progress(`  ${serialCount} migrations one at a time`)
    const starts: Array<number> = []
    const runsMs: Array<number> = []
    for (let i = 0; i < serialCount; i++) {
      const created = await expect<{ id: string }>(
        call("POST", "/api/v1/connections", {
          connectorId: connector.id,
          configuration: { base_url: `https://solo${i}.example.com` }
        }),
        201,
        "create a connection"
      )
      const begin = nowMs()
      const handle = await expect<{ task_id: string }>(
        call("POST", `/api/v1/connections/${created.id}/_migrate_version`, { target_version: 1, timeout_seconds: 600 }),
        202,
        "_migrate_version"
      )
      starts.push(nowMs() - begin)
      for (;;) {
        const states = await db.states([handle.task_id])
        if ((states.active ?? 0) === 0) {
          if ((states.completed ?? 0) !== 1) throw new Error(`a single migration ended ${JSON.stringify(states)}`)
          break
        }
        await sleep(20)
      }
      runsMs.push(nowMs() - begin)
    }
    starts.sort((a, b) => a - b)
    runsMs.sort((a, b) => a - b)
    serial = {
      n: serialCount,
      startP50Ms: percentile(starts, 50),
      startMaxMs: starts.at(-1) ?? Number.NaN,
      taskP50Ms: percentile(runsMs, 50),
      taskMaxMs: runsMs.at(-1) ?? Number.NaN
    }
    progress(
      `  one at a time: 202 after p50 ${serial.startP50Ms.toFixed(0)} ms, task completed after p50 ${serial.taskP50Ms.toFixed(0)} ms`
    )

    for (const [direction, target] of [
      ["v1 -> v2 (up hook)", 2],
      ["v2 -> v1 (down hook)", 1]
    ] as const) {
      progress(`  ${direction}: ${connectionCount} migrations (${startConcurrency} starts in flight)`)
      const taskIds: Array<string> = []
      const started = nowMs()
      await inFlight(ids, startConcurrency, async (id) => {
        const handle = await expect<{ task_id: string }>(
          call("POST", `/api/v1/connections/${id}/_migrate_version`, { target_version: target, timeout_seconds: 600 }),
          202,
          "_migrate_version"
        )
        taskIds.push(handle.task_id)
      })
      const startMs = nowMs() - started
      const deadline = started + Math.max(60_000, migrationBudgetS * 1000 - (nowMs() - t0))
      let states: Record<string, number> = {}
      for (;;) {
        states = await db.states(taskIds)
        if ((states.active ?? 0) === 0 || nowMs() > deadline) break
        await sleep(pollEveryMs)
      }
      const ms = nowMs() - started
      const run: MigrationRun = {
        direction,
        connections: connectionCount,
        ms,
        startMs,
        perSecond: (connectionCount * 1000) / ms,
        completed: states.completed ?? 0,
        failed: states.failed ?? 0
      }
      runs.push(run)
      progress(
        `  ${run.completed} completed, ${run.failed} failed in ${(ms / 1000).toFixed(1)} s: ` +
          `${run.perSecond.toFixed(1)} migrations/s (202s answered in ${(startMs / 1000).toFixed(1)} s)`
      )
      const versions = await db.versions(connector.id)
      // The connections migrated one at a time are on v1 too.
      const expected = connectionCount + (target === 1 ? serialCount : 0)
      if (run.completed !== connectionCount || versions[target] !== expected) {
        return report(`failed: ${direction}: tasks ${JSON.stringify(states)}, versions ${JSON.stringify(versions)}`)
      }
    }
    return report()
  } catch (error) {
    const reason = `failed: ${describe(error)}`
    progress(`${title}: ${reason}`)
    return report(reason)
  } finally {
    await db?.close().catch(() => undefined)
    await Promise.all(processes.map((p) => p.stop("SIGKILL")))
    await database.drop().catch((error: unknown) => progress(`dropping ${database.name}: ${describe(error)}`))
  }
}

/** The group's lines of the printed table. */
export const formatMigration = (report: MigrationReport): ReadonlyArray<string> => {
  const out = ["", report.title]
  for (const row of report.hooks) {
    out.push(
      row.perSecond === undefined
        ? `  ${row.name.padEnd(40)} n=${String(row.n).padEnd(6)} p50 ${row.p50Ms?.toFixed(2)} ms  p99 ${row.p99Ms?.toFixed(2)} ms  max ${row.maxMs?.toFixed(2)} ms`
        : `  ${row.name.padEnd(40)} n=${String(row.n).padEnd(6)} ${row.perSecond.toFixed(0)} hooks/s`
    )
  }
  if (report.serial !== undefined) {
    const s = report.serial
    out.push(
      `  ${s.n} migrations one at a time (v2 -> v1, 20 ms polls): 202 p50 ${s.startP50Ms.toFixed(0)} ms (max ${s.startMaxMs.toFixed(0)}), ` +
        `task completed p50 ${s.taskP50Ms.toFixed(0)} ms (max ${s.taskMaxMs.toFixed(0)})`
    )
  }
  if (report.createMs !== undefined) {
    out.push(`  connections created through the api (16 in flight) in ${(report.createMs / 1000).toFixed(1)} s`)
  }
  if (report.runs.length > 0) {
    out.push(
      `    ${"direction".padEnd(24)}${"connections".padStart(12)}${"total s".padStart(10)}${"migr/s".padStart(9)}` +
        `${"202s s".padStart(9)}${"completed".padStart(11)}${"failed".padStart(8)}`
    )
    for (const r of report.runs) {
      out.push(
        `    ${r.direction.padEnd(24)}${String(r.connections).padStart(12)}${(r.ms / 1000).toFixed(1).padStart(10)}` +
          `${r.perSecond.toFixed(1).padStart(9)}${(r.startMs / 1000).toFixed(1).padStart(9)}` +
          `${String(r.completed).padStart(11)}${String(r.failed).padStart(8)}`
      )
    }
  }
  for (const note of report.notes) out.push(`  note: ${note}`)
  if (report.skipped !== undefined) out.push(`  ${report.skipped.split("\n")[0]?.slice(0, 160) ?? ""}`)
  return out
}
