/**
 * `node test/bench/KitStart.ts [runs]`: the test kit's start to first request as a host suite sees
 * it (docs/testing.md "Start-up time"): each run is a fresh Node process that imports
 * `@svc/testing/SvcTest` (from source, or the packed bundle's `dist/SvcTest.js` named by `SVC_KIT`; timed apart), then times `SvcTest.start({})` to the answer of
 * `GET /ping`, lets the kit's background spare copy finish (as a suite's tests would), and stops.
 * Prints one line per run and the median of the runs after the first.
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
  const spare = fs.readdirSync(cacheDir).some((name) => name.includes(".spare-"))
  // KIT_PROFILE=<file>: a CPU profile of this thread's start (not the import), for Chrome DevTools.
  const profile = process.env.KIT_PROFILE === undefined ? undefined : new inspector.Session()
  profile?.connect()
  await profile?.post("Profiler.enable")
  await profile?.post("Profiler.start")
  const started = performance.now()
  const cpu = process.cpuUsage()
  const svc = await SvcTest.start({})
  await fetch(`${svc.baseUrl}/ping`)
  const startMs = performance.now() - started
  const used = process.cpuUsage(cpu)
  if (profile !== undefined && process.env.KIT_PROFILE !== undefined) {
    const { profile: taken } = await profile.post("Profiler.stop")
    fs.writeFileSync(process.env.KIT_PROFILE, JSON.stringify(taken))
  }
  // The tests of a suite run now; the kit writes the next start's spare copy meanwhile.
  const mine = (name: string) => name.includes(`.copying-${process.pid}-`)
  await new Promise((resolve) => setTimeout(resolve, 500))
  for (let waited = 0; waited < 20_000 && fs.readdirSync(cacheDir).some(mine); waited += 100) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await svc.stop()
  const cpuMs = (used.user + used.system) / 1000
  console.log(JSON.stringify({ importMs, startMs, cpuMs, spare }))
  process.exit(0)
}

const runs = Number(process.argv[2] ?? 5)
const starts: Array<number> = []
for (let run = 1; run <= runs; run++) {
  const output = execFileSync(process.execPath, [import.meta.filename, "--child"], { encoding: "utf8" })
  const line = output.trim().split("\n").at(-1) ?? "{}"
  const { importMs, startMs, cpuMs, spare } = JSON.parse(line) as {
    importMs: number
    startMs: number
    cpuMs: number
    spare: boolean
  }
  starts.push(startMs)
  console.log(
    `run ${run}: import ${Math.round(importMs)} ms, start to first request ${Math.round(startMs)} ms (CPU ${Math.round(cpuMs)} ms; ${spare ? "a ready copy renamed" : "template copied"})`
  )
}
const later = starts.slice(1).sort((a, b) => a - b)
if (later.length > 0)
  console.log(`median of runs 2–${runs}: ${Math.round(later[Math.floor(later.length / 2)] ?? 0)} ms`)
