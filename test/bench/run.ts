/**
 * `npm run bench`: start-up times of the embedded default, then every load group of Scenarios.ts
 * side by side in one run; prints a table on stdout, progress on stderr, and writes
 * test/bench/results/latest.json. Loopback only, bounded in time, kills its children on any exit.
 */
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { installCleanup, killAll } from "./Children.ts"
import { type ColdStartResult, measureColdStart } from "./ColdStart.ts"
import { runLoad } from "./Load.ts"
import { nowMs } from "./Ready.ts"
import { type BenchReport, formatTable, type LoadRow, machineInfo, ratiosOf, writeJson } from "./Report.ts"
import { findTarget, loadGroups, type RunningTarget, TargetUnavailable } from "./Scenarios.ts"

const usage = `usage: node test/bench/run.ts [--duration <s>] [--warmup <s>] [--quick] [--max-time <s>]
  --duration  measured seconds per load row (default 5, at most 60)
  --warmup    warm-up seconds before each load row (default 1)
  --quick     smoke run: 1 s per row after a 0.5 s warm-up
  --max-time  hard cap on the whole run; then everything is killed, exit 124
              (default max(300, 120 + 2 x rows x (duration + warmup)))`

const { values } = parseArgs({
  options: {
    duration: { type: "string" },
    warmup: { type: "string" },
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

const rowCount = loadGroups.reduce((n, g) => n + g.targets.length * g.connections.length, 0)
const defaultCapS = Math.max(300, 120 + 2 * rowCount * (durationS + warmupS))
const hardCapMs = seconds(values["max-time"], defaultCapS, 3600) * 1000
const resultsFile = fileURLToPath(new URL("./results/latest.json", import.meta.url))

const t0 = nowMs()
const progress = (message: string) =>
  process.stderr.write(`[${((nowMs() - t0) / 1000).toFixed(1).padStart(6)} s] ${message}\n`)
const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

const measureGroups = async (): Promise<Array<LoadRow>> => {
  const rows: Array<LoadRow> = []
  for (const group of loadGroups) {
    const running = new Map<string, RunningTarget | string>()
    const ensure = async (id: string): Promise<RunningTarget | string> => {
      const known = running.get(id)
      if (known !== undefined) return known
      progress(`starting ${findTarget(id).label}`)
      const started = await findTarget(id)
        .start()
        .catch((error: unknown) => (error instanceof TargetUnavailable ? "" : "failed: ") + describe(error))
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
            ...(group.headers === undefined ? {} : { headers: group.headers }),
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

const main = async (): Promise<number> => {
  const startedAt = new Date().toISOString()
  progress(
    `bench: ${rowCount} load rows, ${durationS} s each after ${warmupS} s warm-up; hard cap ${hardCapMs / 1000} s`
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
  const report: BenchReport = {
    version: 1,
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: machineInfo(),
    options: { durationS, warmupS },
    ...(coldStart === undefined ? {} : { coldStart }),
    ...(coldStartError === undefined ? {} : { coldStartError }),
    load
  }
  process.stdout.write(formatTable(report))
  await writeJson(resultsFile, report)
  progress(`done; wrote ${resultsFile}`)
  const failed = coldStartError !== undefined || load.some((row) => row.skipped?.startsWith("failed: ") === true)
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
