/**
 * `node test/bench/KitStart.ts [runs]`: the test kit's start to first request as a host suite sees
 * it (docs/testing.md "Start-up time"): each run is a fresh Node process that imports
 * `@svc/testing/SvcTest` (from source, or the packed bundle's `dist/SvcTest.js` named by `SVC_KIT`;
 * timed apart), then times `SvcTest.start({})` to the answer of `GET /ping`, waits a second and
 * lets the kit's background copies finish (as a suite's tests would), and stops; `KIT_STARTS=<n>`
 * starts and stops n times in each process (the later starts timed apart). Prints one line per run,
 * the median of the runs after the first, that of the later starts and the load average.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as inspector from "node:inspector/promises"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"

const cacheDir = path.join(os.tmpdir(), "svc-testing")

if (process.argv[2] === "--child") {
  const imported = performance.now()
  const { SvcTest } = (await import(
    process.env.SVC_KIT === undefined ? "@svc/testing/SvcTest" : pathToFileURL(process.env.SVC_KIT).href
  )) as typeof import("@svc/testing/SvcTest")
  const importMs = performance.now() - imported
  const spare = fs.existsSync(cacheDir) && fs.readdirSync(cacheDir).some((name) => name.includes(".spare-"))
  const starts: Array<number> = []
  let cpuMs = 0
  // KIT_STARTS=<n>: n starts one after the other in this process (each stopped before the next).
  for (let index = 0; index < Number(process.env.KIT_STARTS ?? 1); index++) {
    // KIT_PROFILE=<file>: a CPU profile of this thread's first start (not the import), for Chrome DevTools.
    const profile = process.env.KIT_PROFILE === undefined || index > 0 ? undefined : new inspector.Session()
    profile?.connect()
    await profile?.post("Profiler.enable")
    await profile?.post("Profiler.start")
    const started = performance.now()
    const cpu = process.cpuUsage()
    const svc = await SvcTest.start({})
    await fetch(`${svc.baseUrl}/ping`)
    starts.push(performance.now() - started)
    const used = process.cpuUsage(cpu)
    if (index === 0) cpuMs = (used.user + used.system) / 1000
    if (profile !== undefined && process.env.KIT_PROFILE !== undefined) {
      const { profile: taken } = await profile.post("Profiler.stop")
      fs.writeFileSync(process.env.KIT_PROFILE, JSON.stringify(taken))
    }
    // The tests of a suite run now (a second here); the kit prepares the next start meanwhile: the
    // next database of this process, the ready copies of the next run's.
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    const mine = (name: string) => name.includes(`.copying-${process.pid}-`)
    for (let waited = 0; waited < 20_000 && fs.readdirSync(cacheDir).some(mine); waited += 100) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await svc.stop()
  }
  console.log(JSON.stringify({ importMs, startMs: starts[0], cpuMs, spare, later: starts.slice(1) }))
  process.exit(0)
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0)
}

const runs = Number(process.argv[2] ?? 5)
const starts: Array<number> = []
const within: Array<number> = []
for (let run = 1; run <= runs; run++) {
  const output = execFileSync(process.execPath, [import.meta.filename, "--child"], { encoding: "utf8" })
  const line = output.trim().split("\n").at(-1) ?? "{}"
  const { importMs, startMs, cpuMs, spare, later } = JSON.parse(line) as {
    importMs: number
    startMs: number
    cpuMs: number
    spare: boolean
    later: ReadonlyArray<number>
  }
  starts.push(startMs)
  within.push(...later)
  console.log(
    `run ${run}: import ${Math.round(importMs)} ms, start to first request ${Math.round(startMs)} ms (CPU ${Math.round(cpuMs)} ms; ${spare ? "a ready copy present" : "no ready copy"})${later.length > 0 ? `; later starts in the process ${later.map((ms) => Math.round(ms)).join(", ")} ms` : ""}`
  )
}
if (runs > 1) console.log(`median of runs 2–${runs}: ${median(starts.slice(1))} ms`)
if (within.length > 0) console.log(`median of the later starts within a process: ${median(within)} ms`)
console.log(
  `load average: ${os
    .loadavg()
    .map((load) => load.toFixed(1))
    .join(" ")}`
)
