/**
 * The cluster group (issue 14): `svc serve --service worker` runners on a fresh PostgreSQL database
 * and one client-only cluster member (test/support/clusterClient.ts) calling the `Connection`
 * entity. Measures the entity-call latency of a volatile read (`coolDown`) and of a persisted
 * change (`report429`, a stored message handled in a transaction), then the handoff after SIGTERM
 * and after SIGKILL of the runner owning a connection: the time from the signal until the entity
 * answers from another runner. Skipped with a reason when PostgreSQL is unreachable. Bounded by a
 * time budget; every process is tracked for cleanup and the database is dropped at the end.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Context, Effect, Layer } from "effect"
import type { SqlClient as SqlClientType } from "effect/sql"
import { SqlClient } from "effect/sql"
import * as PgClient from "@svc/sql/PgClient"
import { serverUrl } from "@svc/sql/TestDatabase"
import { freePort, type RunningSvc, runSvc, startSvc, tempDir } from "../support/SvcProcess.ts"
import { trackChild, trackDir } from "./Children.ts"
import { percentile } from "./Load.ts"
import { nowMs, waitFor200 } from "./Ready.ts"

const clientMain = fileURLToPath(new URL("../support/clusterClient.ts", import.meta.url))
const totalShards = 300
/**
 * svc's default `cluster.*` timings (docs/configuration.md), written into the workers' config and
 * passed to the client-only fixture, so that every process runs on the same ones (the fixture's
 * own default is the library's: a 35 s lock expiration, a 1 min health check).
 */
const clusterTimings = {
  shardLockRefreshInterval: 2_000,
  shardLockExpiration: 10_000,
  refreshAssignmentsInterval: 1_000,
  runnerHealthCheckInterval: 5_000,
  entityMessagePollInterval: 1_000
} as const
/** During a handoff, a new `whereabouts` probe is sent this often: the resolution of the handoff time. */
const probeEveryMs = 200

/** Seconds the group may take at most (its own budget, a last sample's overrun, set-up and clean-up). */
export const clusterBudgetS = 120

export interface ClusterOptions {
  readonly quick: boolean
  readonly progress: (message: string) => void
}

/** Latency of one entity operation, sent one at a time from the client-only process. */
export interface EntityCallStats {
  readonly op: string
  readonly label: string
  readonly warmup: number
  /** Measured calls (warm-up excluded), errors included. */
  readonly calls: number
  readonly errors: number
  /** Timed inside the client process, from the call to its answer (the stdio hop excluded). */
  readonly p50Ms: number
  readonly p99Ms: number
  readonly meanMs: number
  readonly maxMs: number
  readonly firstError?: string
}

export interface HandoffSample {
  /** From the signal to the first answer of the entity from another runner (a lower bound if not `answered`). */
  readonly ms: number
  /** False when no other runner answered within the sample's wait (bounded by the group's time budget). */
  readonly answered: boolean
  /** The runner signalled and the one that answered (`w1`, `w2`, …). */
  readonly from: string
  readonly to: string
  /** Calls answered by the signalled runner itself before the handoff (SIGTERM: still shutting down). */
  readonly answeredByOld: number
  /**
   * When the probe sent at the signal was answered from another runner, if it was by the end of the
   * sample (the later probes may overtake it: the client re-routes a call in flight more slowly).
   */
  readonly firstCallMs?: number
  /** From the signal until the other runners' /healthz together report every shard owned. */
  readonly shardsMovedMs?: number
  /** SIGTERM only: from the signal to the runner's exit, and its exit code. */
  readonly exitMs?: number
  readonly exitCode?: number | null
}

export interface ClusterReport {
  readonly title: string
  readonly runners: number
  readonly shards: number
  /** Why the group was not (fully) measured; starts with `failed: ` when it broke. */
  readonly skipped?: string
  readonly setup?: { readonly migrateMs: number; readonly runnersSettledMs: number; readonly clientReadyMs: number }
  readonly calls: ReadonlyArray<EntityCallStats>
  readonly handoffs: {
    readonly sigterm: ReadonlyArray<HandoffSample>
    readonly sigkill: ReadonlyArray<HandoffSample>
  }
  /** Samples wanted per signal, and why fewer were taken (the time budget). */
  readonly samplesWanted: number
  readonly notes: ReadonlyArray<string>
  readonly ms: number
}

/** Unavailable (no PostgreSQL): reported as skipped without failing the run. */
export class DatabaseUnavailable extends Error {}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs `f` on a one-connection client to the `postgres` maintenance database, within 10 s. */
const withAdmin = <A>(f: (sql: SqlClientType.SqlClient) => Effect.Effect<A, unknown>): Promise<A> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.flatMap(Layer.build(PgClient.layer({ url: serverUrl("postgres"), poolSize: 1 })), (context) =>
        f(Context.get(context, SqlClient.SqlClient))
      )
    ).pipe(Effect.timeout("10 seconds"))
  )

/**
 * A fresh `<prefix><random>` database (`svc_bench_cluster_` by default); `drop` terminates its
 * sessions and drops it. Throws `DatabaseUnavailable` when PostgreSQL cannot be reached.
 */
export const createDatabase = async (
  prefix = "svc_bench_cluster_"
): Promise<{ name: string; url: string; drop: () => Promise<void> }> => {
  const name = `${prefix}${randomBytes(6).toString("hex")}`
  try {
    await withAdmin((sql) => sql`CREATE DATABASE ${sql(name)}`)
  } catch (error) {
    throw new DatabaseUnavailable(`PostgreSQL unreachable: ${describe(error)}`)
  }
  const drop = () =>
    withAdmin((sql) =>
      Effect.andThen(
        sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ${name} AND pid <> pg_backend_pid()`,
        sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`
      )
    ).then(() => undefined)
  return { name, url: serverUrl(name), drop }
}

interface Worker {
  readonly name: string
  readonly healthPort: number
  readonly runnerPort: number
  readonly svc: RunningSvc
}

const alive = (w: Worker) => w.svc.child.exitCode === null && w.svc.child.signalCode === null

interface Answer {
  readonly ok: boolean
  readonly result?: unknown
  readonly error?: string
  readonly ms: number
}

/** test/support/clusterClient.ts as a child: one JSON command per line; exits when its stdin closes. */
interface Client {
  readonly call: (op: string, connectionId: string, timeoutMs: number) => Promise<Answer>
  readonly stop: () => Promise<void>
}

const startClient = async (url: string): Promise<Client> => {
  const timings = JSON.stringify({ ...clusterTimings, shardsPerGroup: totalShards })
  const child: ChildProcess = spawn(process.execPath, [clientMain, url, timings], { stdio: ["pipe", "pipe", "pipe"] })
  trackChild(child)
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  let buffer = ""
  let log = ""
  let nextId = 1
  const pending = new Map<number, (answer: Answer) => void>()
  let ready: () => void = () => {}
  const isReady = new Promise<void>((resolve) => {
    ready = resolve
  })
  child.stderr?.on("data", (chunk: Buffer) => {
    log = (log + chunk.toString("utf8")).slice(-4000)
  })
  child.stdout?.on("data", (chunk: Buffer) => {
    buffer += chunk.toString("utf8")
    for (let newline = buffer.indexOf("\n"); newline >= 0; newline = buffer.indexOf("\n")) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      if (!line.startsWith("{")) continue
      const message = JSON.parse(line) as Answer & { ready?: boolean; id?: number }
      if (message.ready === true) ready()
      else if (message.id !== undefined) pending.get(message.id)?.(message)
    }
  })
  const stop = async () => {
    child.stdin?.end()
    const timer = setTimeout(() => child.kill("SIGKILL"), 2_000)
    await exited
    clearTimeout(timer)
  }
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      isReady,
      exited.then(() => Promise.reject(new Error(`cluster client exited before it was ready:\n${log}`))),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`cluster client not ready in 30 s:\n${log}`)), 30_000)
      })
    ])
  } catch (error) {
    await stop()
    throw error
  } finally {
    clearTimeout(timer)
  }
  const call = (op: string, connectionId: string, timeoutMs: number) =>
    new Promise<Answer>((resolve, reject) => {
      const id = nextId++
      const timer = setTimeout(() => {
        pending.delete(id)
        reject(new Error(`${op} ${connectionId}: no answer in ${timeoutMs / 1000} s`))
      }, timeoutMs)
      pending.set(id, (answer) => {
        clearTimeout(timer)
        pending.delete(id)
        resolve(answer)
      })
      child.stdin?.write(`${JSON.stringify({ id, op, connectionId })}\n`)
    })
  return { call, stop }
}

/** A connection id of the shape the entity expects (`cxn_` and 26 characters), fresh per use. */
const freshConnection = () => `cxn_${randomBytes(13).toString("hex")}`

const measureCalls = async (
  client: Client,
  op: string,
  label: string,
  warmup: number,
  calls: number
): Promise<EntityCallStats> => {
  const connection = freshConnection()
  for (let i = 0; i < warmup; i++) await client.call(op, connection, 10_000)
  const times: Array<number> = []
  let errors = 0
  let firstError: string | undefined
  for (let i = 0; i < calls; i++) {
    const answer = await client
      .call(op, connection, 10_000)
      .catch((error: unknown): Answer => ({ ok: false, error: describe(error), ms: 0 }))
    if (answer.ok) times.push(answer.ms)
    else {
      errors++
      firstError ??= answer.error
    }
  }
  const sorted = Float64Array.from(times).sort()
  const mean = times.length === 0 ? 0 : times.reduce((a, b) => a + b, 0) / times.length
  return {
    op,
    label,
    warmup,
    calls,
    errors,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    meanMs: mean,
    maxMs: sorted.length === 0 ? 0 : (sorted[sorted.length - 1] ?? 0),
    ...(firstError === undefined ? {} : { firstError })
  }
}

/** The cluster group: set-up, the two latency rows, then the SIGTERM and SIGKILL handoff samples. */
export const measureCluster = async (options: ClusterOptions): Promise<ClusterReport> => {
  const { progress, quick } = options
  const runnerCount = 3
  const samplesWanted = quick ? 2 : 3
  const warmup = quick ? 10 : 20
  const calls = quick ? 100 : 200
  const budgetMs = 80_000
  const t0 = nowMs()
  const remaining = () => budgetMs - (nowMs() - t0)
  const title = `cluster on PostgreSQL: ${runnerCount} svc worker runners, 1 client-only process`
  const notes: Array<string> = []
  const entityCalls: Array<EntityCallStats> = []
  const sigterm: Array<HandoffSample> = []
  const sigkill: Array<HandoffSample> = []
  let setup: ClusterReport["setup"]
  const report = (skipped?: string): ClusterReport => ({
    title,
    runners: runnerCount,
    shards: totalShards,
    ...(skipped === undefined ? {} : { skipped }),
    ...(setup === undefined ? {} : { setup }),
    calls: entityCalls,
    handoffs: { sigterm, sigkill },
    samplesWanted,
    notes,
    ms: nowMs() - t0
  })

  let database: Awaited<ReturnType<typeof createDatabase>>
  try {
    database = await createDatabase()
  } catch (error) {
    const reason = error instanceof DatabaseUnavailable ? error.message : `failed: ${describe(error)}`
    progress(`${title}: skipped (${reason})`)
    return report(reason)
  }
  progress(`${title}: database ${database.name}`)
  const workers: Array<Worker> = []
  let client: Client | undefined
  let serial = 0
  try {
    const dir = await tempDir("svc-bench-cluster-")
    trackDir(dir)
    await fs.writeFile(path.join(dir, "hs256.secret"), randomBytes(48), { mode: 0o600 })
    await fs.writeFile(path.join(dir, "root.key"), randomBytes(32).toString("base64"), { mode: 0o600 })
    await fs.writeFile(
      path.join(dir, "svc.yaml"),
      [
        `database: { provider: postgres, url: "${database.url}", max_connections: 4 }`,
        "encryption: { root_key: { path: root.key } }",
        `cluster: { shards_per_group: ${totalShards}, shard_lock_refresh_interval: ${clusterTimings.shardLockRefreshInterval}ms, ` +
          `shard_lock_expiration: ${clusterTimings.shardLockExpiration}ms, ` +
          `refresh_assignments_interval: ${clusterTimings.refreshAssignmentsInterval}ms, ` +
          `runner_health_check_interval: ${clusterTimings.runnerHealthCheckInterval}ms, ` +
          `entity_message_poll_interval: ${clusterTimings.entityMessagePollInterval}ms }`,
        "system_auth:",
        "  jwt_signing_key: { private_key: { path: hs256.secret } }"
      ].join("\n")
    )
    const migrateStart = nowMs()
    const migrated = await runSvc(["migrate"], { cwd: dir, timeoutMs: 30_000 })
    if (migrated.code !== 0) throw new Error(`svc migrate exited with ${migrated.code}:\n${migrated.output}`)
    const migrateMs = nowMs() - migrateStart

    const runnerOf = async (w: Worker) => {
      const answer = await fetch(`http://127.0.0.1:${w.healthPort}/healthz`, { signal: AbortSignal.timeout(2_000) })
        .then((r) => r.json() as Promise<{ runner?: { ownedShards?: number } }>)
        .catch(() => ({}) as { runner?: { ownedShards?: number } })
      return answer.runner?.ownedShards ?? 0
    }
    /** Until every live runner owns some shards and together all of them (assignments settled). */
    const settled = async () => {
      const deadline = nowMs() + Math.min(30_000, Math.max(1_000, remaining()))
      for (;;) {
        const owned = await Promise.all(workers.filter(alive).map(runnerOf))
        if (owned.every((n) => n > 0) && owned.reduce((a, b) => a + b, 0) === totalShards) return owned
        if (nowMs() > deadline) throw new Error(`shards not settled in time (owned: ${owned.join(" / ")})`)
        await sleep(50)
      }
    }
    const startWorker = async (): Promise<Worker> => {
      const name = `w${++serial}`
      const healthPort = await freePort()
      const runnerPort = await freePort()
      const svc = startSvc(["serve", "--service", "worker"], {
        cwd: dir,
        env: { SVC__worker__port: String(healthPort), SVC__cluster__runner__port: String(runnerPort) }
      })
      trackChild(svc.child)
      const worker = { name, healthPort, runnerPort, svc }
      workers.push(worker)
      await waitFor200(`http://127.0.0.1:${healthPort}/ping`, svc.child, svc.output, 30_000)
      return worker
    }

    const runnersStart = nowMs()
    progress(`${title}: migrated in ${(migrateMs / 1000).toFixed(1)} s; starting ${runnerCount} runners`)
    await Promise.all(Array.from({ length: runnerCount }, startWorker))
    const owned = await settled()
    const runnersSettledMs = nowMs() - runnersStart
    const clientStart = nowMs()
    client = await startClient(database.url)
    setup = { migrateMs, runnersSettledMs, clientReadyMs: nowMs() - clientStart }
    progress(`  shards ${owned.join(" / ")} after ${(runnersSettledMs / 1000).toFixed(1)} s; client ready`)
    const active = client

    for (const [op, label] of [
      ["coolDown", "coolDown (volatile)"],
      ["report429", "report429 (persisted)"]
    ] as const) {
      progress(`${title}: ${label}: ${warmup} warm-up + ${calls} sequential calls`)
      const stats = await measureCalls(active, op, label, warmup, calls)
      progress(`  p50 ${stats.p50Ms.toFixed(3)} ms, p99 ${stats.p99Ms.toFixed(3)} ms, ${stats.errors} errors`)
      entityCalls.push(stats)
    }

    const ownerOf = async (connection: string): Promise<Worker> => {
      const answer = await active.call("whereabouts", connection, 10_000)
      const address = String(answer.result)
      const worker = workers.find((w) => alive(w) && address.endsWith(`:${w.runnerPort}`))
      if (!answer.ok || worker === undefined) throw new Error(`whereabouts ${connection}: ${answer.error ?? address}`)
      return worker
    }

    /** One sample; waits at most `waitMs` for the answer from another runner (else `answered: false`). */
    const handoff = async (signal: "SIGTERM" | "SIGKILL", waitMs: number): Promise<HandoffSample> => {
      const connection = freshConnection()
      for (let i = 0; i < 3; i++) await active.call("coolDown", connection, 10_000)
      const owner = await ownerOf(connection)
      const started = nowMs()
      const exited = owner.svc.exited.then((code) => ({ exitMs: nowMs() - started, exitCode: code }))
      owner.svc.child.kill(signal)
      let shardsMovedMs: number | undefined
      const watching = (async () => {
        while (shardsMovedMs === undefined && nowMs() < started + 60_000) {
          const owned = await Promise.all(workers.filter((w) => w !== owner && alive(w)).map(runnerOf))
          if (owned.reduce((a, b) => a + b, 0) === totalShards) shardsMovedMs = nowMs() - started
          else await sleep(50)
        }
      })()
      // A `whereabouts` probe at the signal and a new one every probeEveryMs; the first answer
      // from another runner ends the sample. Probes still pending are left to answer or time out.
      let done = false
      let answeredByOld = 0
      let handedOver: (to: { ms: number; worker: Worker }) => void = () => {}
      const answeredElsewhere = new Promise<{ ms: number; worker: Worker }>((resolve) => {
        handedOver = resolve
      })
      const probe = async (): Promise<number | undefined> => {
        const answer = await active
          .call("whereabouts", connection, 45_000)
          .catch((error: unknown): Answer => ({ ok: false, error: describe(error), ms: 0 }))
        const ms = nowMs() - started
        const address = answer.ok ? String(answer.result) : ""
        const to = workers.find((w) => w !== owner && address.endsWith(`:${w.runnerPort}`))
        if (to === undefined) {
          if (answer.ok) answeredByOld++
          return undefined
        }
        handedOver({ ms, worker: to })
        return ms
      }
      let firstCallMs: number | undefined
      void probe().then((ms) => {
        firstCallMs = ms
      })
      void (async () => {
        while (!done) {
          await sleep(probeEveryMs)
          if (!done) void probe()
        }
      })()
      const to = await Promise.race([answeredElsewhere, sleep(waitMs).then(() => undefined)])
      done = true
      await Promise.race([watching, sleep(to === undefined ? 0 : 15_000)])
      const exit = signal === "SIGTERM" ? await Promise.race([exited, sleep(15_000).then(() => undefined)]) : undefined
      return {
        ms: to?.ms ?? nowMs() - started,
        answered: to !== undefined,
        from: owner.name,
        to: to?.worker.name ?? "-",
        answeredByOld,
        ...(firstCallMs === undefined ? {} : { firstCallMs }),
        ...(shardsMovedMs === undefined ? {} : { shardsMovedMs }),
        ...(exit ?? {})
      }
    }

    const signals = [
      ...Array.from({ length: samplesWanted }, () => "SIGTERM" as const),
      ...Array.from({ length: samplesWanted }, () => "SIGKILL" as const)
    ]
    for (const [index, signal] of signals.entries()) {
      // Room for a replacement runner, then for the sample: a SIGKILL one waits out the lock
      // expiration (~10 s) or longer; it is cut at the end of the budget (reported as `>`).
      const missing = runnerCount - workers.filter(alive).length
      const need = (signal === "SIGKILL" ? 15_000 : 5_000) + missing * 6_000
      if (remaining() < need) {
        notes.push(`time budget of ${budgetMs / 1000} s reached: ${signals.length - index} handoff sample(s) not taken`)
        progress(`${title}: ${notes[notes.length - 1]}`)
        break
      }
      for (let i = 0; i < missing; i++) await startWorker()
      await settled()
      progress(
        `${title}: ${signal} of the owning runner (${runnerCount} runners), sample ${(index % samplesWanted) + 1}`
      )
      const sample = await handoff(signal, Math.min(45_000, Math.max(10_000, remaining())))
      ;(signal === "SIGKILL" ? sigkill : sigterm).push(sample)
      const exit = sample.exitMs === undefined ? "" : `, runner exited after ${sample.exitMs.toFixed(0)} ms`
      const first =
        sample.firstCallMs === undefined ? ", first probe pending" : `, first probe ${sample.firstCallMs.toFixed(0)} ms`
      const moved =
        sample.shardsMovedMs === undefined ? "" : `, shards moved after ${sample.shardsMovedMs.toFixed(0)} ms`
      const answer = sample.answered
        ? `${sample.from} -> ${sample.to} in`
        : `${sample.from}: no other runner answered in`
      progress(`  ${answer} ${sample.ms.toFixed(0)} ms${first}${exit}${moved}`)
    }
    return report()
  } catch (error) {
    const reason = `failed: ${describe(error)}`
    progress(`${title}: ${reason}`)
    return report(reason)
  } finally {
    await client?.stop().catch(() => undefined)
    await Promise.all(workers.map((w) => w.svc.stop("SIGKILL")))
    await database.drop().catch((error: unknown) => progress(`dropping ${database.name}: ${describe(error)}`))
  }
}

const fixed = (value: number) => value.toFixed(value < 10 ? 3 : 1)

/** The group's lines of the printed table. */
export const formatCluster = (report: ClusterReport): ReadonlyArray<string> => {
  const out = ["", `${report.title} (${report.shards} shards)`]
  if (report.skipped !== undefined && report.setup === undefined) {
    return [...out, `  skipped: ${report.skipped.split("\n")[0]?.slice(0, 160) ?? ""}`]
  }
  const s = report.setup
  if (s !== undefined) {
    out.push(
      `  set-up: svc migrate ${(s.migrateMs / 1000).toFixed(1)} s; ${report.runners} runners started and shards ` +
        `settled ${(s.runnersSettledMs / 1000).toFixed(1)} s; client ready ${(s.clientReadyMs / 1000).toFixed(1)} s`
    )
  }
  if (report.calls.length > 0) {
    const first = report.calls[0]!
    out.push(
      `  entity call from the client-only process (${first.calls} sequential calls after ${first.warmup} warm-up)`,
      `    ${"operation".padEnd(30)}${"p50 ms".padStart(8)}${"p99 ms".padStart(10)}${"mean ms".padStart(10)}` +
        `${"max ms".padStart(10)}${"errors".padStart(8)}`
    )
    for (const c of report.calls) {
      out.push(
        `    ${c.label.padEnd(30)}${fixed(c.p50Ms).padStart(8)}${fixed(c.p99Ms).padStart(10)}` +
          `${fixed(c.meanMs).padStart(10)}${fixed(c.maxMs).padStart(10)}${String(c.errors).padStart(8)}`
      )
      if (c.firstError !== undefined) out.push(`      error: ${c.firstError.slice(0, 160)}`)
    }
  }
  const samples = [
    ...report.handoffs.sigterm.map((h, i) => ["SIGTERM", i + 1, h] as const),
    ...report.handoffs.sigkill.map((h, i) => ["SIGKILL", i + 1, h] as const)
  ]
  if (samples.length > 0) {
    const optional = (value: number | undefined) => (value === undefined ? "-" : value.toFixed(0))
    out.push(
      `  handoff: signal to the runner owning a connection -> the entity answers from another runner ` +
        `(${report.runners} runners, a probe every ${probeEveryMs} ms)`,
      `    ${"signal".padEnd(9)}${"sample".padStart(6)}${"answered ms".padStart(13)}  ${"runner -> runner".padEnd(16)}` +
        `${"shards moved ms".padStart(17)}${"1st probe ms".padStart(14)}${"exit ms".padStart(9)}`
    )
    for (const [signal, n, h] of samples) {
      const answered = h.answered ? h.ms.toFixed(0) : `>${h.ms.toFixed(0)}`
      out.push(
        `    ${signal.padEnd(9)}${String(n).padStart(6)}${answered.padStart(13)}  ${`${h.from} -> ${h.to}`.padEnd(16)}` +
          `${optional(h.shardsMovedMs).padStart(17)}${optional(h.firstCallMs).padStart(14)}` +
          `${optional(h.exitMs).padStart(9)}`
      )
    }
    const medians = (["SIGTERM", "SIGKILL"] as const).flatMap((signal) => {
      const of = signal === "SIGTERM" ? report.handoffs.sigterm : report.handoffs.sigkill
      if (of.length === 0) return []
      const middle = [...of].sort((x, y) => x.ms - y.ms)[Math.floor((of.length - 1) / 2)]!
      return [`${signal} ${middle.answered ? "" : ">"}${middle.ms.toFixed(0)} ms`]
    })
    out.push(`    median answered: ${medians.join(", ")}`)
  }
  for (const note of report.notes) out.push(`  note: ${note}`)
  if (report.skipped !== undefined) out.push(`  ${report.skipped.split("\n")[0]?.slice(0, 160) ?? ""}`)
  return out
}
