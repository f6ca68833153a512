/**
 * The bench's outputs: the fixed-width table printed on stdout and the JSON document written to
 * test/bench/results/latest.json (schema `version: 1`; `sequences`, `streams`, `cluster`,
 * `lifecycle`, `migration`, `metrics` and `options.generator` added without a bump).
 */
import type { ProxyMemoryReport } from "./ProxyMemory.ts"
import type { FootprintRow } from "./Footprint.ts"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { ProcessUsage } from "./ProcessUsage.ts"
import { type ClusterReport, formatCluster } from "./Cluster.ts"
import type { ColdStartResult } from "./ColdStart.ts"
import { formatLifecycle, type LifecycleReport } from "./Lifecycle.ts"
import { formatWebhooks, type WebhooksReport } from "./Webhooks.ts"
import { formatMigration, type MigrationReport } from "./Migration.ts"
import { formatMetrics, type MetricsReport } from "./Metrics.ts"
import type { SeedResult } from "./ListLatency.ts"
import type { LoadResult } from "./Load.ts"
import type { SequenceResult } from "./Sequential.ts"
import type { FirstByteResult, UploadResult } from "./Stream.ts"
import type { CommandCounts } from "./Target.ts"

export interface Ratios {
  /** target req/s ÷ baseline req/s (below 1: fewer requests per second than the baseline). */
  readonly rps: number
  /** target p50 ÷ baseline p50 (above 1: slower than the baseline). */
  readonly p50: number
  /** target p99 ÷ baseline p99 (above 1: slower than the baseline). */
  readonly p99: number
}

/**
 * The counter-store commands of one measured window (a target with a `StoreProbe`): the deltas of
 * Redis `INFO commandstats` from just before the measured run (after the warm-up) to just after it
 * (once the requests still in flight have ended), over the `GET /json` the upstream served in it.
 */
export interface StoreCommands {
  /** The counter store, e.g. `private redis-server 7.0.15`. */
  readonly store: string
  /** Requests the upstream served in the window: every request svc let through, in flight at the end included. */
  readonly requests: number
  /** Requests the load generator completed in the window (the row's count; up to `connections` fewer). */
  readonly completed: number
  /** Calls (and failed calls) per command in the window. */
  readonly commands: CommandCounts
  readonly total: number
  /** `total / requests`. */
  readonly perRequest: number
  /**
   * `commands` split into those svc sent (each one a round trip) and those the Lua script ran, in
   * the proportion the warm-up's `MONITOR` saw per command (all sent without a warm-up).
   */
  readonly sent: CommandCounts
  readonly inScripts: CommandCounts
  /** Sent commands per request: the round trips to the counter store. */
  readonly sentPerRequest: number
  /**
   * The warm-up watched with `MONITOR`: the commands svc sent (round trips) and those the Lua
   * script ran, over the `GET /json` the upstream served meanwhile.
   */
  readonly warmup?: { readonly requests: number; readonly sent: CommandCounts; readonly inScripts: CommandCounts }
  /** What the same process sent while idle after set-up (background noise, included in `commands` if any). */
  readonly idle: { readonly ms: number; readonly commands: CommandCounts }
}

export interface LoadRow {
  readonly group: string
  readonly groupTitle: string
  readonly target: string
  readonly label: string
  readonly path: string
  readonly connections: number
  readonly baseline: string
  readonly result?: LoadResult
  /** Why the row was not measured (target unavailable or failed). */
  readonly skipped?: string
  readonly ratios?: Ratios
  /** Counter-store commands per request, for targets on a Redis the bench can read. */
  readonly storeCommands?: StoreCommands
  /** CPU time per request and memory of the process under test (svc rows, where `/proc` is readable). */
  readonly usage?: ProcessUsage
}

/** One request of a sequence group and its measured series. */
export interface SequenceRow {
  readonly label: string
  readonly path: string
  readonly result?: SequenceResult
}

/** A sequence group as run: its seeded target, the per-row counts, and the rows. */
export interface SequenceGroupReport {
  readonly group: string
  readonly title: string
  readonly target: string
  readonly targetLabel: string
  readonly warmup: number
  readonly requests: number
  readonly seed?: SeedResult
  /** Why the group was not measured (target unavailable or failed). */
  readonly skipped?: string
  readonly rows: ReadonlyArray<SequenceRow>
}

/** One target of a stream group: the upload and the SSE measurements, or why it was skipped. */
export interface StreamRow {
  readonly target: string
  readonly label: string
  readonly upload?: UploadResult
  readonly sse?: FirstByteResult
  readonly skipped?: string
  /** Upload MB/s ÷ the baseline's, and SSE first-event p50 ÷ the baseline's. */
  readonly ratios?: { readonly mbPerS: number; readonly firstEventP50: number }
}

export interface StreamGroupReport {
  readonly group: string
  readonly title: string
  readonly baseline: string
  readonly uploadBytes: number
  readonly uploadRuns: number
  readonly sseWarmup: number
  readonly sseSamples: number
  readonly rows: ReadonlyArray<StreamRow>
}

export interface BenchReport {
  readonly version: 1
  readonly startedAt: string
  readonly finishedAt: string
  readonly machine: {
    readonly node: string
    readonly platform: string
    readonly cpus: number
    readonly cpu: string
    /** 1-minute load average when the run started and when it ended: other work skews the numbers. */
    readonly loadAverage?: { readonly start: number; readonly end: number }
  }
  readonly options: {
    readonly durationS: number
    readonly warmupS: number
    readonly seedCount: number
    /** The load generator, its version and the CPU pinning, as printed. */
    readonly generator: string
  }
  readonly coldStart?: ColdStartResult
  readonly coldStartError?: string
  /** The proxy memory group (`ProxyMemory.ts`): default heap sizing, then the old generation capped. */
  readonly memory?: ReadonlyArray<ProxyMemoryReport>
  readonly footprint?: ReadonlyArray<FootprintRow>
  readonly load: ReadonlyArray<LoadRow>
  readonly streams: ReadonlyArray<StreamGroupReport>
  readonly sequences: ReadonlyArray<SequenceGroupReport>
  /** The cluster group (Cluster.ts); absent when not run. */
  readonly cluster?: ClusterReport
  /** The lifecycle group (Lifecycle.ts); absent when not run. */
  readonly lifecycle?: LifecycleReport
  /** The webhooks group (Webhooks.ts); absent when not run. */
  readonly webhooks?: WebhooksReport
  /** The migration group (Migration.ts); absent when not run. */
  readonly migration?: MigrationReport
  /** The metrics group (Metrics.ts); absent when not run. */
  readonly metrics?: MetricsReport
}

export const machineInfo = (): BenchReport["machine"] => ({
  node: process.version,
  platform: `${process.platform} ${process.arch}`,
  cpus: os.availableParallelism(),
  cpu: os.cpus()[0]?.model ?? "unknown"
})

export const ratiosOf = (result: LoadResult, base: LoadResult): Ratios => ({
  rps: base.rps === 0 ? 0 : result.rps / base.rps,
  p50: base.p50Ms === 0 ? 0 : result.p50Ms / base.p50Ms,
  p99: base.p99Ms === 0 ? 0 : result.p99Ms / base.p99Ms
})

interface Column {
  readonly title: string
  readonly width: number
  readonly left?: boolean
}

const cell = (text: string, column: Column) =>
  column.left === true ? text.padEnd(column.width) : text.padStart(column.width)

const line = (columns: ReadonlyArray<Column>, cells: ReadonlyArray<string>) =>
  columns
    .map((column, i) => cell(cells[i] ?? "", column))
    .join("  ")
    .trimEnd()

/**
 * A skip reason on one line of the table: its first line, plus the first error line of a captured
 * process output when there is one, cut at 160 characters (the whole text is on stderr and in the JSON).
 */
const brief = (reason: string): string => {
  const lines = reason
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "")
  const [first = "", ...rest] = lines
  const error = rest.find((l) => /\bError\b|\bERROR\b/.test(l))
  const text = error === undefined ? first : `${first} ... ${error}`
  return text.length > 160 ? `${text.slice(0, 157)}...` : text
}

const ms = (value: number) => value.toFixed(value < 10 ? 3 : 1)
const x = (value: number) => `${value.toFixed(2)}x`

const loadColumns = (title: string): ReadonlyArray<Column> => [
  { title, width: 30, left: true },
  { title: "conns", width: 5 },
  { title: "req/s", width: 9 },
  { title: "p50 ms", width: 8 },
  { title: "p99 ms", width: 8 },
  { title: "errors", width: 6 },
  { title: "req/s", width: 7 },
  { title: "p50", width: 7 },
  { title: "p99", width: 7 }
]

const loadCells = (row: LoadRow): ReadonlyArray<string> => {
  const head = [row.label, String(row.connections)]
  if (row.result === undefined) return [...head, `skipped: ${brief(row.skipped ?? "not run")}`]
  const r = row.result
  const measured = [...head, r.rps.toFixed(0), ms(r.p50Ms), ms(r.p99Ms), String(r.errors)]
  if (row.target === row.baseline) return [...measured, "", "baseline"]
  if (row.ratios === undefined) return measured
  return [...measured, x(row.ratios.rps), x(row.ratios.p50), x(row.ratios.p99)]
}

const storeColumns: ReadonlyArray<Column> = [
  { title: "    target", width: 32, left: true },
  { title: "conns", width: 5 },
  { title: "requests", width: 9 },
  { title: "sent/req", width: 8 },
  { title: "script/req", width: 10 },
  { title: "all/req", width: 8 },
  { title: "per request: sent | run by the script", width: 0, left: true }
]

const perCommand = (counts: CommandCounts, requests: number): string =>
  Object.entries(counts)
    .sort(([a, x], [b, y]) => y.calls - x.calls || a.localeCompare(b))
    .map(
      ([name, c]) =>
        `${name} ${requests === 0 ? c.calls : (c.calls / requests).toFixed(3)}${c.failed === 0 ? "" : ` (${c.failed} failed)`}`
    )
    .join(", ")

const sum = (counts: CommandCounts) => Object.values(counts).reduce((total, c) => total + c.calls, 0)

/** The CPU-per-request and memory lines of the process under test, when some rows have them. */
const formatUsage = (rows: ReadonlyArray<LoadRow>): ReadonlyArray<string> => {
  const measured = rows.filter((row) => row.usage !== undefined)
  if (measured.length === 0) return []
  const out = [
    "",
    "  the svc process per row: CPU time (user + system, /proc, warm-up included) per request served, its RSS,",
    "  and its main thread's heap: KB allocated per request (garbage included) and the p99 GC pause (HeapProbe.ts)",
    line(
      usageColumns,
      usageColumns.map((c) => c.title)
    )
  ]
  for (const row of measured) {
    const u = row.usage!
    out.push(
      line(usageColumns, [
        `    ${row.label}`,
        String(row.connections),
        u.cpuMsPerRequest.toFixed(3),
        u.rssMb.toFixed(0),
        u.allocatedKbPerRequest === undefined ? "-" : u.allocatedKbPerRequest.toFixed(1),
        u.gcPauseP99Ms === undefined ? "-" : u.gcPauseP99Ms.toFixed(2)
      ])
    )
  }
  return out
}

const usageColumns: ReadonlyArray<Column> = [
  { title: "", width: 40, left: true },
  { title: "conns", width: 5 },
  { title: "CPU ms/req", width: 10 },
  { title: "RSS MB", width: 7 },
  { title: "alloc KB/req", width: 12 },
  { title: "GC p99 ms", width: 9 }
]

/** The commands-per-request lines under a load group, when some of its rows have them. */
const formatStoreCommands = (rows: ReadonlyArray<LoadRow>): ReadonlyArray<string> => {
  const measured = rows.filter((row) => row.storeCommands !== undefined)
  const first = measured[0]?.storeCommands
  if (first === undefined) return []
  const out = [
    "",
    `  counter-store commands per proxied request (${first.store}, used by nothing else): INFO commandstats`,
    "  deltas over the measured window / GET /json the upstream served in it. commandstats also counts what a",
    "  Lua script runs: MONITOR during the warm-up tells sent (round trips) from run by the script",
    line(
      storeColumns,
      storeColumns.map((c) => c.title)
    )
  ]
  for (const row of measured) {
    const c = row.storeCommands!
    const per = (n: number) => (c.requests === 0 ? "-" : (n / c.requests).toFixed(3))
    out.push(
      line(storeColumns, [
        `    ${row.label}`,
        String(row.connections),
        String(c.requests),
        per(sum(c.sent)),
        per(sum(c.inScripts)),
        per(c.total),
        `${perCommand(c.sent, c.requests) || "none"} | ${perCommand(c.inScripts, c.requests) || "none"}`
      ])
    )
  }
  const wide = measured.filter((row) => row.connections > 1)
  if (wide.length > 0) {
    const most = Math.max(...wide.map((row) => row.connections / Math.max(1, row.storeCommands!.requests)))
    out.push(
      `    at ${wide[0]!.connections} connections wrk ends a run with requests in flight: svc checked them, the upstream ` +
        `may not see them (up to +${most.toFixed(3)} per request here)`
    )
  }
  const idle = first.idle
  const idleTotal = sum(idle.commands)
  out.push(
    `    background: the idle api process sent ${idleTotal} command(s) in ${(idle.ms / 1000).toFixed(1)} s after ` +
      `set-up${idleTotal === 0 ? "" : ` (${perCommand(idle.commands, 0)})`}`
  )
  return out
}

const sequenceColumns = (title: string): ReadonlyArray<Column> => [
  { title, width: 38, left: true },
  { title: "items", width: 5 },
  { title: "req/s", width: 7 },
  { title: "p50 ms", width: 8 },
  { title: "p95 ms", width: 8 },
  { title: "max ms", width: 8 },
  { title: "errors", width: 6 }
]

const sequenceCells = (row: SequenceRow): ReadonlyArray<string> => {
  const r = row.result
  if (r === undefined) return [row.label, "not run"]
  const items = r.items === undefined ? "-" : `${r.items}${r.more === true ? "+" : ""}`
  return [row.label, items, r.rps.toFixed(0), ms(r.p50Ms), ms(r.p95Ms), ms(r.maxMs), String(r.errors)]
}

const formatSequence = (group: SequenceGroupReport): ReadonlyArray<string> => {
  const out = [
    "",
    `${group.title} on ${group.targetLabel}: ${group.requests} sequential requests per row after ${group.warmup} warm-up`
  ]
  if (group.skipped !== undefined) return [...out, `  skipped: ${brief(group.skipped)}`]
  const s = group.seed
  if (s !== undefined) {
    const rate = `${s.rate.toFixed(0)}/s, ${s.concurrency} in flight`
    out.push(`  seeded ${s.count} ${s.what} in ${(s.ms / 1000).toFixed(1)} s (${rate})`)
  }
  const columns = sequenceColumns("  labelSelector (share of rows)")
  out.push(
    line(
      columns,
      columns.map((c) => c.title)
    )
  )
  for (const row of group.rows) {
    out.push(
      line(
        columns,
        sequenceCells(row).map((c, i) => (i === 0 ? `  ${c}` : c))
      )
    )
  }
  return out
}

const streamColumns: ReadonlyArray<Column> = [
  { title: "  target", width: 22, left: true },
  { title: "MB/s", width: 8 },
  { title: "errors", width: 6 },
  { title: "1st event p50", width: 13 },
  { title: "max ms", width: 8 },
  { title: "errors", width: 6 },
  { title: "MB/s", width: 7 },
  { title: "p50", width: 7 }
]

const streamCells = (row: StreamRow, baseline: string): ReadonlyArray<string> => {
  const head = `  ${row.label}`
  if (row.skipped !== undefined) return [head, `skipped: ${brief(row.skipped)}`]
  const u = row.upload
  const e = row.sse
  const upload = u === undefined ? ["-", "-"] : [u.mbPerS.toFixed(0), String(u.errors)]
  const sse = e === undefined ? ["-", "-", "-"] : [ms(e.p50Ms), ms(e.maxMs), String(e.errors)]
  const ratios =
    row.target === baseline
      ? ["", "baseline"]
      : row.ratios === undefined
        ? []
        : [x(row.ratios.mbPerS), x(row.ratios.firstEventP50)]
  return [head, ...upload, ...sse, ...ratios]
}

const formatStreams = (group: StreamGroupReport): ReadonlyArray<string> => {
  const baseLabel = group.rows.find((row) => row.target === group.baseline)?.label ?? group.baseline
  const ratioAt = streamColumns.slice(0, 6).reduce((sum, c) => sum + c.width + 2, 0)
  const out = [
    "",
    `${group.title}: POST ${(group.uploadBytes / 1e6).toFixed(0)} MB (median of ${group.uploadRuns}), ` +
      `SSE time to first event in ms (median of ${group.sseSamples} after ${group.sseWarmup} warm-up)`,
    `${"".padEnd(ratioAt)}ratio vs ${baseLabel}`,
    line(
      streamColumns,
      streamColumns.map((c) => c.title)
    )
  ]
  for (const row of group.rows) {
    out.push(line(streamColumns, streamCells(row, group.baseline)))
    if (row.upload?.firstError !== undefined) out.push(`      upload error: ${row.upload.firstError}`)
    if (row.sse?.firstError !== undefined) out.push(`      sse error: ${row.sse.firstError}`)
  }
  return out
}

export const formatTable = (report: BenchReport): string => {
  const m = report.machine
  const out: Array<string> = [
    `svc bench: node ${m.node}, ${m.platform}, ${m.cpus} cpu(s) (${m.cpu})` +
      (m.loadAverage === undefined
        ? ""
        : `; load average ${m.loadAverage.start.toFixed(2)} at start, ${m.loadAverage.end.toFixed(2)} at end`),
    `load: ${report.options.durationS} s measured per row after ${report.options.warmupS} s warm-up, loopback, closed loop`,
    `load generator: ${report.options.generator}`,
    ""
  ]
  const start: ReadonlyArray<Column> = [
    { title: "start-up (embedded default)", width: 40, left: true },
    { title: "ms", width: 9 }
  ]
  out.push(
    line(
      start,
      start.map((c) => c.title)
    )
  )
  if (report.coldStart === undefined) {
    out.push(report.coldStartError === undefined ? "  not run (--only)" : `  failed: ${report.coldStartError}`)
  } else {
    const c = report.coldStart
    out.push(line(start, ["  first start, fresh dir -> api /ping 200", c.firstStartMs.toFixed(0)]))
    out.push(line(start, ["  graceful stop (SIGTERM -> exit)", c.stopMs.toFixed(0)]))
    out.push(line(start, ["  warm restart, same dir -> api /ping 200", c.warmRestartMs.toFixed(0)]))
  }
  const groups = [...new Set(report.load.map((row) => row.group))]
  for (const group of groups) {
    const rows = report.load.filter((row) => row.group === group)
    const first = rows[0]
    if (first === undefined) continue
    const baseLabel = rows.find((row) => row.target === first.baseline)?.label ?? first.baseline
    const columns = loadColumns(first.groupTitle)
    const ratioAt = columns.slice(0, 6).reduce((sum, c) => sum + c.width + 2, 0)
    out.push("", `${"".padEnd(ratioAt)}ratio vs ${baseLabel}`)
    out.push(
      line(
        columns,
        columns.map((c) => c.title)
      )
    )
    for (const row of rows)
      out.push(
        line(
          columns,
          loadCells(row).map((c, i) => (i === 0 ? `  ${c}` : c))
        )
      )
    out.push(...formatStoreCommands(rows))
    out.push(...formatUsage(rows))
  }
  for (const group of report.streams) out.push(...formatStreams(group))
  for (const group of report.sequences) out.push(...formatSequence(group))
  if (report.cluster !== undefined) out.push(...formatCluster(report.cluster))
  if (report.lifecycle !== undefined) out.push(...formatLifecycle(report.lifecycle))
  if (report.webhooks !== undefined) out.push(...formatWebhooks(report.webhooks))
  if (report.migration !== undefined) out.push(...formatMigration(report.migration))
  if (report.metrics !== undefined) out.push(...formatMetrics(report.metrics))
  return `${out.join("\n")}\n`
}

export const writeJson = async (file: string, report: BenchReport): Promise<void> => {
  await fs.mkdir(path.dirname(file), { recursive: true })
  await fs.writeFile(file, `${JSON.stringify(report, null, 2)}\n`)
}
