/**
 * One svc proxy route under load, for profiling (docs/performance.md "Reproduce"): the bench
 * upstream and svc on the embedded default (the same connector, connection and pinning as the
 * proxy group of `npm run bench`), wrk (or the in-process generator) on the route for a warm-up
 * and a measured window, then the svc process's CPU time per request (its `/proc` CPU time over
 * the window divided by the requests the upstream served in it: the least noise-sensitive figure
 * on a shared machine) and its RSS. With `--cpu-prof`, svc runs under `node --cpu-prof` and the
 * profile of the whole run is summarised (self time per area and per function). With
 * `--rss-requests N`, the RSS growth over N requests after warm-up is measured too.
 *
 *   node test/bench/profile.ts [--route raw|envelope] [--connections 64] [--seconds 10]
 *                              [--warmup 3] [--rules 0|1|10] [--cpu-prof] [--rss-requests 100000]
 *                              [--rss-rounds 1] [--production]   (PostgreSQL + Redis, api service alone)
 *                              [--telemetry]   (embedded, telemetry on as in the bench's
 *                              "telemetry on" row: sampling 1.0, every signal to a local gRPC collector)
 *                              [--target bare]   (the bench's bare undici proxy instead of svc, the
 *                              same load and pinning: the floor the ledger is read against)
 *
 * With `--cpu-prof`, the summary ends with the per-request ledger: each thread's busy time by the
 * part of the request it served (`stageTimes` in `CpuProfile.ts`), in µs of CPU per request the
 * upstream served over the whole run (start-up and warm-up included).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { installCleanup } from "./Children.ts"
import { pin } from "./Cpu.ts"
import { formatProfile, formatStages, stageTimes, summarizeProfile } from "./CpuProfile.ts"
import { runLoad } from "./Load.ts"
import { heapMark, heapWindow, installHeapProbe, percentileOf, probeSettleMs } from "./HeapProbe.ts"
import { cpuMs, rssMb } from "./ProcessUsage.ts"
import { startProductionSvc } from "./Production.ts"
import {
  createBenchConnections,
  envelopeRoute,
  type ProxySvc,
  proxyJsonRequest,
  type RuleCount,
  rawRoute,
  startEmbeddedSvc,
  startBareProxy,
  startEmbeddedTelemetrySvc,
  startUpstream,
  upstreamCount
} from "./Proxy.ts"
import { measureRssGrowth, rssGrowthGoalMb } from "./RssGrowth.ts"
import { tempDir } from "../support/SvcProcess.ts"
import { runWrk, wrkVersion } from "./Wrk.ts"

const args = process.argv.slice(2)
const option = (name: string, fallback: string): string => {
  const index = args.indexOf(`--${name}`)
  return index === -1 ? fallback : (args[index + 1] ?? fallback)
}
const route = option("route", "raw")
if (route !== "raw" && route !== "envelope") throw new Error(`--route raw|envelope, got ${route}`)
const connections = Number(option("connections", "64"))
const seconds = Number(option("seconds", "10"))
const warmup = Number(option("warmup", "3"))
const rules = Number(option("rules", "0")) as RuleCount
const profiling = args.includes("--cpu-prof")
const rssRequests = Number(option("rss-requests", "0"))

const stopCleanup = installCleanup((seconds + warmup + 600) * 1000)
// every Node process started below logs its heap (allocated bytes and GC pauses, HeapProbe.ts)
installHeapProbe()
const profileDir = profiling ? await tempDir("svc-profile-") : undefined
const upstream = await startUpstream("generator")
const production = args.includes("--production")
const target = option("target", "svc")
if (target !== "svc" && target !== "bare") throw new Error(`--target svc|bare, got ${target}`)
// `--env NAME=value,…`: added to the environment of the process under test (e.g. MALLOC_ARENA_MAX=2,
// BENCH_BURN_US=70 for the bare proxy); with `--cpu-prof`, its NODE_OPTIONS gain the profiler's flags.
const extraEnv: Record<string, string> = Object.fromEntries(
  option("env", "")
    .split(",")
    .filter((pair) => pair.includes("="))
    .map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)])
)
const profileEnv: Record<string, string> =
  profileDir === undefined
    ? extraEnv
    : {
        ...extraEnv,
        NODE_OPTIONS:
          `${process.env.NODE_OPTIONS ?? ""} ${extraEnv.NODE_OPTIONS ?? ""} --cpu-prof --cpu-prof-dir=${profileDir}`.trim()
      }

/** The bare proxy as a `ProxySvc`: no connections, no authorization (it sets the upstream's own). */
const bareSvc = async (): Promise<ProxySvc> => {
  const proxy = await startBareProxy(upstream.origin, profileEnv)
  return {
    origin: `http://127.0.0.1:${proxy.port}`,
    pid: proxy.pid,
    stop: proxy.stop,
    authorization: "",
    connections: { 0: "", 1: "", 10: "" },
    upstreamOrigin: upstream.origin
  }
}

let servedInRun = 0
const svc: ProxySvc =
  target === "bare"
    ? await bareSvc()
    : production
      ? await (async () => {
          // PostgreSQL + a private Redis, `svc serve --service api` alone (the bench's pg+redis rows)
          const started = await startProductionSvc({
            upstreamOrigin: upstream.origin,
            forwarded: () => upstreamCount(upstream.origin),
            setup: createBenchConnections,
            env: profileEnv
          })
          return { ...started, connections: started.created, upstreamOrigin: upstream.origin }
        })()
      : await (args.includes("--telemetry") ? startEmbeddedTelemetrySvc : startEmbeddedSvc)(upstream.origin, profileEnv)
pin(svc.pid, "servers")
try {
  const shape =
    target === "bare"
      ? proxyJsonRequest
      : (route === "raw" ? rawRoute : envelopeRoute)(svc, svc.connections[rules])(proxyJsonRequest)
  const url = `${svc.origin}${shape.path}`
  const load = {
    url,
    connections,
    durationMs: seconds * 1000,
    warmupMs: 0,
    method: shape.method as "GET" | "POST",
    headers: shape.headers,
    ...(shape.body === undefined ? {} : { body: shape.body })
  }
  const generator = wrkVersion() === undefined ? runLoad : runWrk
  await generator({ ...load, durationMs: warmup * 1000 })
  const pid = svc.pid as number
  const cpuBefore = cpuMs(pid) as number
  const mark = heapMark(pid)
  const servedBefore = await upstreamCount(upstream.origin)
  const result = await generator(load)
  await new Promise((resolve) => setTimeout(resolve, probeSettleMs))
  const cpuAfter = cpuMs(pid) as number
  const served = (await upstreamCount(upstream.origin)) - servedBefore
  const heap = heapWindow(pid, mark)
  console.log(
    `${target === "bare" ? "bare proxy" : `${route} rules=${rules}`} c=${connections}: ${result.rps.toFixed(0)} req/s, ` +
      `p50 ${result.p50Ms.toFixed(2)} ms, ` +
      `p99 ${result.p99Ms.toFixed(2)} ms, errors ${result.errors}; ` +
      `${target === "bare" ? "proxy" : "svc"} ${((cpuAfter - cpuBefore) / served).toFixed(3)} ms CPU/request over ${served} requests, ` +
      (heap === undefined
        ? ""
        : `${(heap.allocatedBytes / 1024 / served).toFixed(1)} KB allocated/request (main thread), ` +
          `GC pause p99 ${(percentileOf(heap.pausesUs, 99) / 1000).toFixed(2)} ms over ${heap.pausesUs.length} GCs, `) +
      `RSS ${rssMb(pid)?.toFixed(0)} MB`
  )
  if (rssRequests > 0) {
    // `--rss-rounds N`: N windows one after the other (the first after the warm-up), to tell a
    // heap still growing to its working size (shrinking growth) from a leak (steady growth).
    const rounds = Number(option("rss-rounds", "1"))
    for (let round = 0; round < rounds; round++) {
      const growth = await measureRssGrowth({
        pid,
        url,
        method: load.method,
        headers: load.headers,
        body: load.body,
        warmupRequests: round === 0 ? 20_000 : 0,
        requests: rssRequests,
        connections
      })
      if (growth !== undefined)
        console.log(
          `RSS over ${growth.requests} requests${round === 0 ? " after warm-up" : ` (window ${round + 1})`}: ` +
            `${growth.rssAfterWarmupMb.toFixed(0)} -> ${growth.rssAfterMb.toFixed(0)} MB ` +
            `(${growth.growthMb >= 0 ? "+" : ""}${growth.growthMb.toFixed(1)} MB, goal <= ${rssGrowthGoalMb}), ` +
            `${growth.errors} errors, ${growth.seconds.toFixed(1)} s`
        )
    }
  }
} finally {
  await svc.stop()
  // Every request the upstream served over the run, warm-up included: what the profile covers.
  servedInRun = await upstreamCount(upstream.origin).catch(() => 0)
  await upstream.stop()
}
if (profileDir !== undefined) {
  // One profile per thread: CPU.<date>.<pid>.<thread id>.<seq>.cpuprofile, the main thread's id 0
  // (the embedded PGlite runs in a worker thread of its own).
  const files = fs
    .readdirSync(profileDir)
    .filter((name) => name.endsWith(".cpuprofile"))
    .sort()
  if (files.length === 0) console.log("no profile written")
  for (const file of files) {
    const thread = file.split(".")[4] ?? "?"
    const kept = path.join("/tmp", `svc-${target === "bare" ? "bare" : route}-${Date.now()}-thread${thread}.cpuprofile`)
    fs.copyFileSync(path.join(profileDir, file), kept)
    console.log(`profile of thread ${thread}${thread === "0" ? " (main)" : ""}: ${kept}`)
    console.log(formatProfile(summarizeProfile(kept), Number(option("top", "30"))))
    if (servedInRun > 0) console.log(formatStages(stageTimes(kept), servedInRun))
  }
}
stopCleanup()
process.exit(0)
