/**
 * `npm run bench`: start-up times of the embedded default, then every load group and every
 * sequence group of Scenarios.ts in one run; prints a table on stdout, progress on stderr, and writes
 * test/bench/results/latest.json. Loopback only, bounded in time, kills its children on any exit.
 */
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { installCleanup, killAll } from "./Children.ts"
import { type ColdStartResult, measureColdStart } from "./ColdStart.ts"
import { runLoad } from "./Load.ts"
import { nowMs } from "./Ready.ts"
import {
  type BenchReport,
  formatTable,
  type LoadRow,
  machineInfo,
  ratiosOf,
  type SequenceGroupReport,
  writeJson
} from "./Report.ts"
import {
  findTarget,
  loadGroups,
  type RunningTarget,
  type SequenceGroup,
  sequenceGroups,
  TargetUnavailable
} from "./Scenarios.ts"
import { runSequence } from "./Sequential.ts"

const usage = `usage: node test/bench/run.ts [--duration <s>] [--warmup <s>] [--seed <n>] [--quick] [--max-time <s>]
  --duration  measured seconds per load row (default 5, at most 60)
  --warmup    warm-up seconds before each load row (default 1)
  --seed      rows a seeding target creates, e.g. connections for the list latency (default 10000)
  --quick     smoke run: 1 s per row after a 0.5 s warm-up; seed 1000; 50 requests per
              sequence row after 10 warm-up
  --max-time  hard cap on the whole run; then everything is killed, exit 124
              (default max(300, 120 + 2 x rows x (duration + warmup) + 60 + seed / 25 per
              sequence group))`

const { values } = parseArgs({
  options: {
    duration: { type: "string" },
    warmup: { type: "string" },
    seed: { type: "string" },
    quick: { type: "boolean", default: false },
    "max-time": { type: "string" },
    help: { type: "boolean", default: false }
  }
})
if (values.help) {
  process.stdout.write(`${usage}\n`)
  process.exit(0)
}

const seconds = (raw: string | undefined, fallback: number, max: number): number => {
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0 || value > max) {
    process.stderr.write(`bench: expected a number of seconds in (0, ${max}], got "${raw}"\n${usage}\n`)
    process.exit(2)
  }
  return value
}
const durationS = seconds(values.duration, values.quick ? 1 : 5, 60)
const warmupS = seconds(values.warmup, values.quick ? 0.5 : 1, 10)

const seedCount = ((raw: string | undefined) => {
  if (raw === undefined) return values.quick ? 1_000 : 10_000
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 100 || value > 100_000) {
    process.stderr.write(`bench: expected --seed to be an integer in [100, 100000], got "${raw}"\n${usage}\n`)
    process.exit(2)
  }
  return value
})(values.seed)
const sequenceCounts = (group: SequenceGroup) =>
  values.quick
    ? { warmup: Math.min(group.warmup, 10), requests: Math.min(group.requests, 50) }
    : { warmup: group.warmup, requests: group.requests }

const rowCount = loadGroups.reduce((n, g) => n + g.targets.length * g.connections.length, 0)
const sequenceBudgetS = sequenceGroups.length * (60 + seedCount / 25)
const defaultCapS = Math.max(300, 120 + 2 * rowCount * (durationS + warmupS) + sequenceBudgetS)
const hardCapMs = seconds(values["max-time"], defaultCapS, 3600) * 1000
const resultsFile = fileURLToPath(new URL("./results/latest.json", import.meta.url))

const t0 = nowMs()
const progress = (message: string) =>
  process.stderr.write(`[${((nowMs() - t0) / 1000).toFixed(1).padStart(6)} s] ${message}\n`)
const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** Starts a target; a string is why it cannot be measured (`failed: …` when it broke). */
const startTarget = (id: string): Promise<RunningTarget | string> => {
  progress(`starting ${findTarget(id).label}`)
  return findTarget(id)
    .start({ progress, seedCount })
    .catch((error: unknown) => (error instanceof TargetUnavailable ? "" : "failed: ") + describe(error))
}

const measureGroups = async (): Promise<Array<LoadRow>> => {
  const rows: Array<LoadRow> = []
  for (const group of loadGroups) {
    const running = new Map<string, RunningTarget | string>()
    const ensure = async (id: string): Promise<RunningTarget | string> => {
      const known = running.get(id)
      if (known !== undefined) return known
      const started = await startTarget(id)
      running.set(id, started)
      return started
    }
    try {
      for (const connections of group.connections) {
        for (const id of group.targets) {
          const target = findTarget(id)
          const base = { group: group.id, groupTitle: group.title, target: id, label: target.label, path: group.path }
          const row = { ...base, connections, baseline: group.baseline }
          const started = await ensure(id)
          if (typeof started === "string") {
            progress(`${group.title} ${target.label} c=${connections}: skipped (${started})`)
            rows.push({ ...row, skipped: started })
            continue
          }
          progress(`${group.title} ${target.label} c=${connections}: ${warmupS} s warm-up + ${durationS} s`)
          const result = await runLoad({
            url: `${started.origin}${group.path}`,
            connections,
            durationMs: durationS * 1000,
            warmupMs: warmupS * 1000,
            method: group.method,
            headers: { ...group.headers, ...started.headers },
            ...(group.body === undefined ? {} : { body: group.body })
          })
          progress(`  ${result.rps.toFixed(0)} req/s, p50 ${result.p50Ms.toFixed(3)} ms, ${result.errors} errors`)
          rows.push({ ...row, result })
        }
      }
    } finally {
      for (const started of running.values()) if (typeof started !== "string") await started.stop()
    }
  }
  return rows.map((row) => {
    const base = rows.find(
      (b) => b.group === row.group && b.target === row.baseline && b.connections === row.connections
    )?.result
    return row.result === undefined || base === undefined || row.target === row.baseline
      ? row
      : { ...row, ratios: ratiosOf(row.result, base) }
  })
}

const measureSequences = async (): Promise<Array<SequenceGroupReport>> => {
  const reports: Array<SequenceGroupReport> = []
  for (const group of sequenceGroups) {
    const target = findTarget(group.target)
    const counts = sequenceCounts(group)
    const head = { group: group.id, title: group.title, target: target.id, targetLabel: target.label, ...counts }
    const rows = group.queries.map((query) => ({ label: query.label, path: query.path }))
    const started = await startTarget(group.target)
    if (typeof started === "string") {
      progress(`${group.title}: skipped (${started})`)
      reports.push({ ...head, skipped: started, rows })
      continue
    }
    try {
      const measured = []
      for (const query of group.queries) {
        progress(`${query.label}: ${counts.warmup} warm-up + ${counts.requests} sequential requests`)
        const result = await runSequence({
          origin: started.origin,
          path: query.path,
          ...counts,
          ...(started.headers === undefined ? {} : { headers: started.headers })
        })
        progress(`  p50 ${result.p50Ms.toFixed(3)} ms, p95 ${result.p95Ms.toFixed(3)} ms, ${result.errors} errors`)
        measured.push({ label: query.label, path: query.path, result })
      }
      reports.push({ ...head, ...(started.seed === undefined ? {} : { seed: started.seed }), rows: measured })
    } finally {
      await started.stop()
    }
  }
  return reports
}

const main = async (): Promise<number> => {
  const startedAt = new Date().toISOString()
  progress(
    `bench: ${rowCount} load rows, ${durationS} s each after ${warmupS} s warm-up; ` +
      `${sequenceGroups.length} sequence group(s), seed ${seedCount}; hard cap ${hardCapMs / 1000} s`
  )
  let coldStart: ColdStartResult | undefined
  let coldStartError: string | undefined
  progress("start-up: svc serve in a fresh dir, then a restart on the same dir")
  try {
    coldStart = await measureColdStart()
    progress(`  first ${coldStart.firstStartMs.toFixed(0)} ms, restart ${coldStart.warmRestartMs.toFixed(0)} ms`)
  } catch (error) {
    coldStartError = describe(error)
    progress(`  failed: ${coldStartError}`)
  }
  const load = await measureGroups()
  const sequences = await measureSequences()
  const report: BenchReport = {
    version: 1,
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: machineInfo(),
    options: { durationS, warmupS, seedCount },
    ...(coldStart === undefined ? {} : { coldStart }),
    ...(coldStartError === undefined ? {} : { coldStartError }),
    load,
    sequences
  }
  process.stdout.write(formatTable(report))
  await writeJson(resultsFile, report)
  progress(`done; wrote ${resultsFile}`)
  const broke = (skipped: string | undefined) => skipped?.startsWith("failed: ") === true
  const failed =
    coldStartError !== undefined || load.some((row) => broke(row.skipped)) || sequences.some((g) => broke(g.skipped))
  return failed ? 1 : 0
}

const disarm = installCleanup(hardCapMs)
main()
  .catch((error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    return 1
  })
  .then((code) => {
    disarm()
    killAll()
    process.exit(code)
  })
