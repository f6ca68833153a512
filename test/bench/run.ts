/**
 * `npm run bench`: start-up times of the embedded default, then every load group, stream group and
 * sequence group of Scenarios.ts, then the cluster group, the lifecycle group, the migration group and the metrics group, in one run
 * (`--only` picks some); prints a table on stdout, progress on stderr, and writes
 * test/bench/results/latest.json. A target is started on first use and stopped after the last
 * group that uses it. Loopback only, bounded in time (about 5 min with the defaults;
 * `--max-time`), kills its children on any exit.
 */
import * as os from "node:os"
import { measureUsage, type ProcessUsage } from "./ProcessUsage.ts"
import { installHeapProbe, removeHeapProbe } from "./HeapProbe.ts"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { installCleanup, killAll } from "./Children.ts"
import { clusterBudgetS, measureCluster } from "./Cluster.ts"
import { type ColdStartResult, measureColdStart } from "./ColdStart.ts"
import { onGeneratorCpu } from "./Cpu.ts"
import { selectGenerator } from "./Generator.ts"
import { lifecycleBudgetS, measureLifecycle } from "./Lifecycle.ts"
import { measureWebhooks, webhooksBudgetS } from "./Webhooks.ts"
import { measureMigration, migrationBudgetS } from "./Migration.ts"
import { footprintBudgetS, formatFootprint, measureFootprint } from "./Footprint.ts"
import { formatProxyMemory, measureProxyMemory, proxyMemoryBudgetS } from "./ProxyMemory.ts"
import { defaultEmbeddedEvents, defaultPostgresEvents, measureMetrics, metricsBudgetS } from "./Metrics.ts"
import { nowMs } from "./Ready.ts"
import {
  type BenchReport,
  formatTable,
  type LoadRow,
  machineInfo,
  ratiosOf,
  type SequenceGroupReport,
  type StreamGroupReport,
  type StreamRow,
  writeJson
} from "./Report.ts"
import {
  findTarget,
  type LoadGroup,
  loadGroups as allLoadGroups,
  type RequestShape,
  type RunningTarget,
  type SequenceGroup,
  type StreamGroup,
  sequenceGroups as allSequenceGroups,
  streamGroups as allStreamGroups,
  TargetUnavailable
} from "./Scenarios.ts"
import { commandDelta, splitBySource, totalCalls } from "./Redis.ts"
import { runSequence } from "./Sequential.ts"
import { measureFirstByte, measureUpload } from "./Stream.ts"
import type { StoreProbe } from "./Target.ts"

const usage = `usage: node test/bench/run.ts [--duration <s>] [--warmup <s>] [--seed <n>] [--quick]
                              [--generator auto|wrk|undici] [--only <ids>] [--max-time <s>]
                              [--metrics-events <n>] [--metrics-embedded-events <n>]
  --duration   measured seconds per load row (default 5, at most 60; wrk rounds up to whole seconds)
  --warmup     warm-up seconds before each load row (default 1)
  --seed       rows a seeding target creates, e.g. connections for the list latency (default 10000)
  --quick      smoke run: 1 s per row after a 0.5 s warm-up; 1 upload and 10 SSE samples per
               stream row; seed 1000; 50 requests per sequence row after 10 warm-up
  --generator  load generator of the load rows: wrk when installed (auto, the default), or the
               in-process undici one
  --only       comma-separated parts to run, by id: start-up, a load group (ping, proxy), a
               stream group (proxy-stream), a sequence group (list-connections), cluster,
               lifecycle, webhooks, migration, metrics, proxy-memory, footprint (default: all of them)
  --metrics-events           request events the metrics group seeds on PostgreSQL (default
               5000000 with --only metrics, 1000000 in a full run, 200000 with --quick)
  --metrics-embedded-events  request events it seeds on the embedded PGlite (default 500000,
               50000 with --quick)
  --max-time   hard cap on the whole run; then everything is killed, exit 124
               (default max(300, 120 + 2 x rows x (duration + warmup) + per stream target
               (20 s per upload + 0.5 s per SSE sample) + 60 + seed / 25 per sequence group
               + 60 when a load group has a PostgreSQL + Redis target + 120 for the cluster
               group + 120 for the lifecycle group + 150 for the webhooks group + 300 for the migration group + 60 + 60 s per million PostgreSQL events
               + 200 s per million embedded events for the metrics group))`

const { values } = parseArgs({
  options: {
    duration: { type: "string" },
    warmup: { type: "string" },
    seed: { type: "string" },
    quick: { type: "boolean", default: false },
    generator: { type: "string", default: "auto" },
    only: { type: "string" },
    "max-time": { type: "string" },
    "metrics-events": { type: "string" },
    "metrics-embedded-events": { type: "string" },
    help: { type: "boolean", default: false }
  }
})
if (values.help) {
  process.stdout.write(`${usage}\n`)
  process.exit(0)
}
const fail = (message: string): never => {
  process.stderr.write(`bench: ${message}\n${usage}\n`)
  process.exit(2)
}

const seconds = (raw: string | undefined, fallback: number, max: number): number => {
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0 || value > max)
    fail(`expected a number of seconds in (0, ${max}], got "${raw}"`)
  return value
}
const wanted = values.generator
if (wanted !== "auto" && wanted !== "wrk" && wanted !== "undici") fail(`unknown --generator "${wanted}"`)
const generator = (() => {
  try {
    return selectGenerator(wanted as "auto" | "wrk" | "undici")
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error))
  }
})()
const only = values.only === undefined ? undefined : new Set(values.only.split(",").map((id) => id.trim()))
if (only !== undefined) {
  const known = [
    "start-up",
    ...[...allLoadGroups, ...allStreamGroups, ...allSequenceGroups].map((g) => g.id),
    "cluster",
    "lifecycle",
    "webhooks",
    "migration",
    "metrics",
    "proxy-memory",
    "footprint"
  ]
  const unknown = [...only].filter((id) => !known.includes(id))
  if (unknown.length > 0 || only.size === 0) fail(`--only: unknown "${unknown.join(",")}"; one of ${known.join(", ")}`)
}
const selected = (id: string) => only === undefined || only.has(id)
const loadGroups = allLoadGroups.filter((g) => selected(g.id))
const streamGroups = allStreamGroups.filter((g) => selected(g.id))
const sequenceGroups = allSequenceGroups.filter((g) => selected(g.id))
const runStartUp = selected("start-up")
const runCluster = selected("cluster")
const runLifecycle = selected("lifecycle")
const runWebhooks = selected("webhooks")
const runMigration = selected("migration")
const runMetrics = selected("metrics")
const runMemory = selected("proxy-memory")
const runFootprint = selected("footprint")

const durationS = generator.seconds(seconds(values.duration, values.quick ? 1 : 5, 60))
const warmupS = generator.seconds(seconds(values.warmup, values.quick ? 0.5 : 1, 10))

const seedCount = ((raw: string | undefined) => {
  if (raw === undefined) return values.quick ? 1_000 : 10_000
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 100 || value > 100_000) {
    fail(`expected --seed to be an integer in [100, 100000], got "${raw}"`)
  }
  return value
})(values.seed)
const eventCount = (raw: string | undefined, flag: string, fallback: number): number => {
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1000 || value > 50_000_000) {
    fail(`expected ${flag} to be an integer in [1000, 50000000], got "${raw}"`)
  }
  return value
}
const metricsEvents = {
  postgres: eventCount(
    values["metrics-events"],
    "--metrics-events",
    values.quick ? 200_000 : only === undefined ? defaultPostgresEvents.full : defaultPostgresEvents.only
  ),
  embedded: eventCount(
    values["metrics-embedded-events"],
    "--metrics-embedded-events",
    values.quick ? 50_000 : defaultEmbeddedEvents
  )
}
const sequenceCounts = (group: SequenceGroup) =>
  values.quick
    ? { warmup: Math.min(group.warmup, 10), requests: Math.min(group.requests, 50) }
    : { warmup: group.warmup, requests: group.requests }
const streamCounts = (group: StreamGroup) =>
  values.quick
    ? { runs: 1, warmup: Math.min(group.sse.warmup, 2), samples: Math.min(group.sse.samples, 10) }
    : { runs: group.upload.runs, warmup: group.sse.warmup, samples: group.sse.samples }

const rowCount = loadGroups.reduce((n, g) => n + g.targets.length * g.connections.length, 0)
const streamBudgetS = streamGroups.reduce((sum, g) => {
  const c = streamCounts(g)
  return sum + g.targets.length * (20 * (c.runs + 1) + 0.5 * (c.warmup + c.samples))
}, 0)
const sequenceBudgetS = sequenceGroups.length * (60 + seedCount / 25)
/** Creating a database, migrating it and starting a redis-server and svc on them. */
const productionBudgetS = loadGroups.some((g) => g.targets.some((id) => id.startsWith("proxy-pg-"))) ? 60 : 0
const defaultCapS = Math.max(
  300,
  120 +
    2 * rowCount * (durationS + warmupS) +
    streamBudgetS +
    sequenceBudgetS +
    productionBudgetS +
    (runCluster ? clusterBudgetS : 0) +
    (runLifecycle ? lifecycleBudgetS : 0) +
    (runWebhooks ? webhooksBudgetS : 0) +
    (runMigration ? migrationBudgetS : 0) +
    (runMemory ? proxyMemoryBudgetS : 0) +
    (runFootprint ? footprintBudgetS : 0) +
    (runMetrics ? metricsBudgetS(metricsEvents.postgres, metricsEvents.embedded) : 0)
)
const hardCapMs = seconds(values["max-time"], defaultCapS, 3600) * 1000
const resultsFile = fileURLToPath(new URL("./results/latest.json", import.meta.url))

const t0 = nowMs()
const progress = (message: string) =>
  process.stderr.write(`[${((nowMs() - t0) / 1000).toFixed(1).padStart(6)} s] ${message}\n`)
const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** Every group in run order, as the target ids it uses: targets live from first to last use. */
const phases: ReadonlyArray<ReadonlyArray<string>> = [
  ...loadGroups.map((g) => g.targets),
  ...streamGroups.map((g) => g.targets),
  ...sequenceGroups.map((g) => [g.target])
]
const lastUse = new Map<string, number>()
phases.forEach((ids, index) => {
  for (const id of ids) lastUse.set(id, index)
})
/** Started targets; a string is why it cannot be measured (`failed: …` when it broke). */
const running = new Map<string, RunningTarget | string>()

const ensure = async (id: string): Promise<RunningTarget | string> => {
  const known = running.get(id)
  if (known !== undefined) return known
  progress(`starting ${findTarget(id).label}`)
  const started = await findTarget(id)
    .start({ progress, seedCount })
    .catch((error: unknown) => (error instanceof TargetUnavailable ? "" : "failed: ") + describe(error))
  running.set(id, started)
  return started
}

const stopTarget = async (id: string) => {
  const started = running.get(id)
  running.delete(id)
  if (started !== undefined && typeof started !== "string") {
    await started.stop().catch((error: unknown) => progress(`stopping ${id}: ${describe(error)}`))
  }
}

/** Stops the targets no later group uses. */
const endPhase = async (index: number) => {
  for (const [id, last] of lastUse) if (last === index) await stopTarget(id)
}

const routed = (target: RunningTarget, request: RequestShape): RequestShape =>
  (target.route ?? ((r: RequestShape) => r))({ ...request, headers: { ...request.headers, ...target.headers } })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** Longer than any request of a row takes: the requests still in flight when a run ends have ended. */
const settleMs = 300

/**
 * A row on a target with a counter-store probe: the warm-up as a run of its own, then the probe
 * read, the measured run, and the probe read again once the requests in flight have ended. The
 * deltas cover the measured run only, over the requests the upstream served in it.
 */
const runCounted = async (
  group: LoadGroup,
  options: Parameters<typeof generator.run>[0],
  store: StoreProbe
): Promise<{ result: LoadRow["result"] & {}; storeCommands: NonNullable<LoadRow["storeCommands"]> }> => {
  if (group.method !== "GET") throw new Error(`${group.id}: counted rows need GET ${group.path}`)
  let warmup: NonNullable<LoadRow["storeCommands"]>["warmup"]
  if (options.warmupMs > 0) {
    const from = await store.forwarded()
    const monitor = await store.monitor()
    try {
      await generator.run({ ...options, durationMs: options.warmupMs, warmupMs: 0 })
      await sleep(settleMs)
    } finally {
      const seen = await monitor.stop()
      warmup = { requests: (await store.forwarded()) - from, ...seen }
    }
  } else await sleep(settleMs)
  const before = { commands: await store.commands(), forwarded: await store.forwarded() }
  const result = await generator.run({ ...options, warmupMs: 0 })
  await sleep(settleMs)
  const after = { commands: await store.commands(), forwarded: await store.forwarded() }
  const commands = commandDelta(before.commands, after.commands)
  const requests = after.forwarded - before.forwarded
  const total = totalCalls(commands)
  const split = warmup === undefined ? { sent: commands, inScripts: {} } : splitBySource(commands, warmup)
  return {
    result,
    storeCommands: {
      store: store.label,
      requests,
      completed: result.requests,
      commands,
      total,
      perRequest: requests === 0 ? 0 : total / requests,
      ...split,
      sentPerRequest: requests === 0 ? 0 : totalCalls(split.sent) / requests,
      ...(warmup === undefined ? {} : { warmup }),
      idle: store.idle
    }
  }
}

const measureGroups = async (): Promise<Array<LoadRow>> => {
  const rows: Array<LoadRow> = []
  // the processes the load groups start log their heap (allocated bytes, GC pauses per row)
  installHeapProbe()
  for (const [index, group] of loadGroups.entries()) {
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
        progress(
          `${group.title} ${target.label} c=${connections}: ${warmupS} s warm-up + ${durationS} s (${generator.tool})`
        )
        const request = routed(started, {
          method: group.method,
          path: group.path,
          headers: group.headers ?? {},
          ...(group.body === undefined ? {} : { body: group.body })
        })
        const options = {
          url: `${started.origin}${request.path}`,
          connections,
          durationMs: durationS * 1000,
          warmupMs: warmupS * 1000,
          method: request.method,
          headers: request.headers,
          ...(request.body === undefined ? {} : { body: request.body })
        }
        const totalMs = (warmupS + durationS) * 1000
        const usageText = (usage: ProcessUsage | undefined) =>
          usage === undefined
            ? ""
            : `; svc ${usage.cpuMsPerRequest.toFixed(3)} ms CPU/request, ${usage.rssMb.toFixed(0)} MB RSS` +
              (usage.allocatedKbPerRequest === undefined
                ? ""
                : `, ${usage.allocatedKbPerRequest.toFixed(1)} KB allocated/request, GC pause p99 ${usage.gcPauseP99Ms?.toFixed(2)} ms`)
        if (started.store === undefined) {
          const { result, usage } = await measureUsage(started.pid, totalMs, () => generator.run(options))
          progress(
            `  ${result.rps.toFixed(0)} req/s, p50 ${result.p50Ms.toFixed(3)} ms, ${result.errors} errors${usageText(usage)}`
          )
          rows.push({ ...row, result, ...(usage === undefined ? {} : { usage }) })
        } else {
          const store = started.store
          const measured = await measureUsage(started.pid, totalMs, async () => {
            const counted = await runCounted(group, options, store)
            return { ...counted, rps: counted.result.rps }
          })
          const { result, storeCommands } = measured.result
          const usage = measured.usage
          progress(
            `  ${result.rps.toFixed(0)} req/s, p50 ${result.p50Ms.toFixed(3)} ms, ${result.errors} errors; ` +
              `counter store: ${storeCommands.sentPerRequest.toFixed(3)} commands sent per request, ` +
              `${storeCommands.perRequest.toFixed(3)} in commandstats${usageText(usage)}`
          )
          rows.push({ ...row, result, storeCommands, ...(usage === undefined ? {} : { usage }) })
        }
      }
    }
    await endPhase(index)
  }
  removeHeapProbe()
  return rows.map((row) => {
    const base = rows.find(
      (b) => b.group === row.group && b.target === row.baseline && b.connections === row.connections
    )?.result
    return row.result === undefined || base === undefined || row.target === row.baseline
      ? row
      : { ...row, ratios: ratiosOf(row.result, base) }
  })
}

const measureStreams = async (): Promise<Array<StreamGroupReport>> => {
  const reports: Array<StreamGroupReport> = []
  for (const [index, group] of streamGroups.entries()) {
    const counts = streamCounts(group)
    const rows: Array<StreamRow> = []
    for (const id of group.targets) {
      const target = findTarget(id)
      const head = { target: id, label: target.label }
      const started = await ensure(id)
      if (typeof started === "string") {
        progress(`${group.title} ${target.label}: skipped (${started})`)
        rows.push({ ...head, skipped: started })
        continue
      }
      const mb = (group.upload.bytes / 1e6).toFixed(0)
      progress(`${group.title} ${target.label}: ${counts.runs} x POST ${mb} MB, then ${counts.samples} SSE streams`)
      const upload = await onGeneratorCpu(() =>
        measureUpload(
          started.origin,
          routed(started, { method: "POST", path: group.upload.path, headers: {} }),
          group.upload.bytes,
          counts.runs
        )
      )
      const sse = await onGeneratorCpu(() =>
        measureFirstByte(started.origin, routed(started, { method: "GET", path: group.sse.path, headers: {} }), {
          warmup: counts.warmup,
          samples: counts.samples,
          events: group.sse.events
        })
      )
      progress(`  ${upload.mbPerS.toFixed(0)} MB/s, SSE first event p50 ${sse.p50Ms.toFixed(3)} ms`)
      rows.push({ ...head, upload, sse })
    }
    const base = rows.find((row) => row.target === group.baseline)
    const ratio = (value: number, of: number | undefined) => (of === undefined || of === 0 ? 0 : value / of)
    reports.push({
      group: group.id,
      title: group.title,
      baseline: group.baseline,
      uploadBytes: group.upload.bytes,
      uploadRuns: counts.runs,
      sseWarmup: counts.warmup,
      sseSamples: counts.samples,
      rows: rows.map((row) =>
        row.upload === undefined || row.sse === undefined || base?.upload === undefined || row === base
          ? row
          : {
              ...row,
              ratios: {
                mbPerS: ratio(row.upload.mbPerS, base.upload.mbPerS),
                firstEventP50: ratio(row.sse.p50Ms, base.sse?.p50Ms)
              }
            }
      )
    })
    await endPhase(loadGroups.length + index)
  }
  return reports
}

const measureSequences = async (): Promise<Array<SequenceGroupReport>> => {
  const reports: Array<SequenceGroupReport> = []
  for (const [index, group] of sequenceGroups.entries()) {
    const target = findTarget(group.target)
    const counts = sequenceCounts(group)
    const head = { group: group.id, title: group.title, target: target.id, targetLabel: target.label, ...counts }
    const rows = group.queries.map((query) => ({ label: query.label, path: query.path }))
    const started = await ensure(group.target)
    if (typeof started === "string") {
      progress(`${group.title}: skipped (${started})`)
      reports.push({ ...head, skipped: started, rows })
    } else {
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
    }
    await endPhase(loadGroups.length + streamGroups.length + index)
  }
  return reports
}

const main = async (): Promise<number> => {
  const startedAt = new Date().toISOString()
  const loadAtStart = os.loadavg()[0] ?? 0
  progress(
    `bench: ${runStartUp ? "start-up; " : ""}${rowCount} load rows, ${durationS} s each after ${warmupS} s warm-up; ` +
      `${streamGroups.length} stream group(s); ${sequenceGroups.length} sequence group(s), seed ${seedCount}; ` +
      (runCluster ? "the cluster group; " : "") +
      (runLifecycle ? "the lifecycle group; " : "") +
      (runWebhooks ? "the webhooks group; " : "") +
      (runMigration ? "the migration group; " : "") +
      (runMetrics
        ? `the metrics group (${metricsEvents.postgres} events on PostgreSQL, ${metricsEvents.embedded} embedded); `
        : "") +
      `hard cap ${hardCapMs / 1000} s`
  )
  progress(`load generator: ${generator.description}`)
  let coldStart: ColdStartResult | undefined
  let coldStartError: string | undefined
  if (runStartUp) {
    progress("start-up: svc serve in a fresh dir, then a restart on the same dir")
    try {
      coldStart = await measureColdStart()
      progress(`  first ${coldStart.firstStartMs.toFixed(0)} ms, restart ${coldStart.warmRestartMs.toFixed(0)} ms`)
    } catch (error) {
      coldStartError = describe(error)
      progress(`  failed: ${coldStartError}`)
    }
  }
  try {
    const load = await measureGroups()
    const streams = await measureStreams()
    const sequences = await measureSequences()
    const memory = runMemory ? await measureProxyMemory({ quick: values.quick, progress }) : undefined
    const footprint = runFootprint ? await measureFootprint({ runs: 3, progress }) : undefined
    const cluster = runCluster ? await measureCluster({ quick: values.quick, progress }) : undefined
    const lifecycle = runLifecycle ? await measureLifecycle({ quick: values.quick, progress }) : undefined
    const webhooks = runWebhooks ? await measureWebhooks({ quick: values.quick, progress }) : undefined
    const migration = runMigration ? await measureMigration({ quick: values.quick, progress }) : undefined
    const metrics = runMetrics
      ? await measureMetrics({
          quick: values.quick,
          progress,
          postgresEvents: metricsEvents.postgres,
          embeddedEvents: metricsEvents.embedded
        })
      : undefined
    const report: BenchReport = {
      version: 1,
      startedAt,
      finishedAt: new Date().toISOString(),
      machine: { ...machineInfo(), loadAverage: { start: loadAtStart, end: os.loadavg()[0] ?? 0 } },
      options: { durationS, warmupS, seedCount, generator: generator.description },
      ...(coldStart === undefined ? {} : { coldStart }),
      ...(coldStartError === undefined ? {} : { coldStartError }),
      load,
      streams,
      sequences,
      ...(cluster === undefined ? {} : { cluster }),
      ...(lifecycle === undefined ? {} : { lifecycle }),
      ...(webhooks === undefined ? {} : { webhooks }),
      ...(migration === undefined ? {} : { migration }),
      ...(metrics === undefined ? {} : { metrics }),
      ...(memory === undefined ? {} : { memory }),
      ...(footprint === undefined ? {} : { footprint })
    }
    process.stdout.write(formatTable(report))
    if (memory !== undefined) process.stdout.write(`\n${formatProxyMemory(memory)}`)
    if (footprint !== undefined) process.stdout.write(`\n${formatFootprint(footprint)}`)
    await writeJson(resultsFile, report)
    progress(`done; wrote ${resultsFile}`)
    const broke = (skipped: string | undefined) => skipped?.startsWith("failed: ") === true
    const failed =
      coldStartError !== undefined ||
      load.some((row) => broke(row.skipped)) ||
      streams.some((g) => g.rows.some((row) => broke(row.skipped))) ||
      sequences.some((g) => broke(g.skipped)) ||
      broke(cluster?.skipped) ||
      broke(lifecycle?.skipped) ||
      broke(webhooks?.skipped) ||
      broke(migration?.skipped) ||
      (memory?.some((run) => broke(run.skipped)) ?? false) ||
      (footprint?.some((row) => broke(row.skipped)) ?? false) ||
      (metrics?.backends.some((b) => broke(b.skipped)) ?? false)
    return failed ? 1 : 0
  } finally {
    for (const id of [...running.keys()]) await stopTarget(id)
  }
}

/** Builds dist/ (svc, cli) and the UI bundles when their sources changed: every svc the bench starts runs dist/svc.js. */
const build = async (): Promise<void> => {
  // Imported by URL: the build script lives outside this project's sources.
  const script = new URL("../../scripts/build.ts", import.meta.url).href
  const { buildBundle } = (await import(script)) as { buildBundle: () => Promise<boolean> }
  if (await buildBundle()) progress("built dist/ (svc, cli)")
  const ui = new URL("../../packages/server/ui/build.ts", import.meta.url).href
  const { buildUi } = (await import(ui)) as { buildUi: () => Promise<ReadonlyArray<string>> }
  await buildUi()
}

const disarm = installCleanup(hardCapMs)
build()
  .then(main)
  .catch((error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    return 1
  })
  .then((code) => {
    disarm()
    killAll()
    process.exit(code)
  })
