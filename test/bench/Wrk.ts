/**
 * `wrk` (Debian package `wrk`) as the load generator of the load rows: one thread, `connections`
 * keep-alive connections, a warm-up run then the measured run, the request (method, headers, body)
 * and a `done` hook that prints the summary written into a Lua script in a private temp dir (so
 * tokens never appear on a command line). wrk takes whole seconds, so durations are rounded up.
 */
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { tempDir } from "../support/SvcProcess.ts"
import { trackChild, trackDir } from "./Children.ts"
import { tasksetPrefix } from "./Cpu.ts"
import type { LoadOptions, LoadResult } from "./Load.ts"

/** `wrk`'s version (e.g. `debian/4.1.0-3+b2`), or `undefined` when it is not on PATH. */
export const wrkVersion = (): string | undefined => {
  const probe = spawnSync("wrk", ["-v"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
  if (probe.error !== undefined) return undefined
  return /^wrk (\S+)/m.exec(`${probe.stdout}\n${probe.stderr}`)?.[1] ?? "unknown version"
}

/** Whole seconds wrk runs for `ms` (at least 1). */
export const wrkSeconds = (ms: number): number => Math.max(1, Math.ceil(ms / 1000 - 1e-9))

/** A Lua string literal holding `text` byte for byte (decimal escapes outside a safe set). */
const luaString = (text: string): string =>
  `"${[...Buffer.from(text, "utf8")]
    .map((byte) => (/[A-Za-z0-9 ._:/,=+-]/.test(String.fromCharCode(byte)) ? String.fromCharCode(byte) : `\\${byte}`))
    .join("")}"`

const marker = "BENCH_WRK"

const script = (options: LoadOptions): string =>
  [
    `wrk.method = ${luaString(options.method ?? "GET")}`,
    ...Object.entries(options.headers ?? {}).map(
      ([name, value]) => `wrk.headers[${luaString(name)}] = ${luaString(value)}`
    ),
    ...(options.body === undefined ? [] : [`wrk.body = ${luaString(options.body)}`]),
    "done = function(summary, latency, requests)",
    "  local e = summary.errors",
    `  io.write(string.format("\\n${marker} %d %d %d %d %d %d %d %.3f %d %d %d %d\\n",`,
    "    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,",
    "    latency.mean, latency.max, latency:percentile(50), latency:percentile(90), latency:percentile(99)))",
    "end",
    ""
  ].join("\n")

interface WrkSummary {
  readonly requests: number
  readonly durationUs: number
  readonly transport: number
  readonly status: number
  readonly meanUs: number
  readonly maxUs: number
  readonly p50Us: number
  readonly p90Us: number
  readonly p99Us: number
}

const parse = (output: string): WrkSummary | undefined => {
  const line = output.split("\n").find((l) => l.startsWith(`${marker} `))
  if (line === undefined) return undefined
  const n = line
    .slice(marker.length + 1)
    .split(" ")
    .map(Number)
  if (n.length !== 12 || n.some((value) => !Number.isFinite(value))) return undefined
  const [requests, durationUs, connect, read, write, status, timeout, meanUs, maxUs, p50Us, p90Us, p99Us] = n as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number
  ]
  return {
    requests,
    durationUs,
    transport: connect + read + write + timeout,
    status,
    meanUs,
    maxUs,
    p50Us,
    p90Us,
    p99Us
  }
}

const runOnce = (file: string, url: string, connections: number, seconds: number): Promise<WrkSummary> =>
  new Promise((resolve, reject) => {
    const args = ["-t1", `-c${connections}`, `-d${seconds}s`, "--timeout", "10s", "-s", file, url]
    const [command, ...prefix] = [...tasksetPrefix("generator"), "wrk"]
    const child = spawn(command ?? "wrk", [...prefix, ...args], { stdio: ["ignore", "pipe", "pipe"] })
    trackChild(child)
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8")
    })
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8")
    })
    const timer = setTimeout(() => child.kill("SIGKILL"), (seconds + 30) * 1000)
    child.once("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.once("exit", (code, signal) => {
      clearTimeout(timer)
      const summary = parse(output)
      if (code === 0 && summary !== undefined) resolve(summary)
      else reject(new Error(`wrk exited (${code ?? signal}) without a summary: ${output.trim().slice(-500)}`))
    })
  })

let scratch: Promise<string> | undefined

/** Runs the warm-up then the measured window with wrk; statuses are `2xx/3xx`, `4xx/5xx`, `error`. */
export const runWrk = async (options: LoadOptions): Promise<LoadResult> => {
  scratch ??= tempDir("svc-bench-wrk-").then((dir) => {
    trackDir(dir)
    return dir
  })
  const dir = await scratch
  const file = path.join(dir, `request-${process.hrtime.bigint()}.lua`)
  await fs.writeFile(file, script(options), { mode: 0o600 })
  try {
    if (options.warmupMs > 0) await runOnce(file, options.url, options.connections, wrkSeconds(options.warmupMs))
    const s = await runOnce(file, options.url, options.connections, wrkSeconds(options.durationMs))
    const durationMs = Math.max(s.durationUs / 1000, 1)
    const ok = s.requests - s.status
    return {
      connections: options.connections,
      requests: s.requests,
      errors: s.status + s.transport,
      durationMs,
      rps: (s.requests / durationMs) * 1000,
      meanMs: s.meanUs / 1000,
      p50Ms: s.p50Us / 1000,
      p90Ms: s.p90Us / 1000,
      p99Ms: s.p99Us / 1000,
      maxMs: s.maxUs / 1000,
      statuses: {
        ...(ok > 0 ? { "2xx/3xx": ok } : {}),
        ...(s.status > 0 ? { "4xx/5xx": s.status } : {}),
        ...(s.transport > 0 ? { error: s.transport } : {})
      }
    }
  } finally {
    await fs.rm(file, { force: true })
  }
}
