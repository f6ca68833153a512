/**
 * The footprint group (issue 30): what starting svc and running a `cli` command cost, as a user
 * runs them. CPU is user + system time from `/proc`, never wall time alone:
 *
 * - a one-shot command (`svc --help`, `cli --help`, `cli list connectors`, `svc migrate` with
 *   nothing to do) runs to its end as a child of the bench, which waits for it, so the growth of
 *   the bench's own `cutime + cstime` (`/proc/self/stat`) over the run is exactly what the command
 *   and everything it waited for spent; peak RSS is the last `VmHWM` seen while it ran;
 * - a server (`npm start` on the embedded default, `svc serve --service api|worker` on PostgreSQL
 *   + Redis) is timed from spawn until its health URL answers 200; its CPU is the sum over the
 *   live process tree (npm, sh, node) of utime + stime + cutime + cstime (a finished child such as
 *   a build step is in its parent's cutime); idle RSS is the largest `VmRSS` of the tree 2 s after
 *   ready;
 * - growth: the embedded default (`svc serve`, no flag) in front of the bench upstream takes
 *   20,000 `_proxy_raw` requests from 64 keep-alive connections right after it is ready (no
 *   warm-up: what a fresh process grows by); its RSS 1 s after ready and 1 s after the requests,
 *   and the process's CPU over the requests.
 *
 * Each case runs `runs` times (default 3) and reports the range. `npm start` runs in the
 * repository with `SVC__data_dir` on a temp dir (first start: a fresh one, then restarts on it).
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import * as path from "node:path"
import { randomUUID } from "node:crypto"
import { freePort, freePorts, portEnv, repoRoot, tempDir } from "../support/SvcProcess.ts"
import { trackChild, trackDir } from "./Children.ts"
import { createDatabase, DatabaseUnavailable } from "./Cluster.ts"
import { opsWorkspace } from "./OpsApi.ts"
import { cpuMs, rssMb } from "./ProcessUsage.ts"
import { proxyJsonRequest, rawRoute, startEmbeddedSvc, startUpstream } from "./Proxy.ts"
import { nowMs, waitFor200 } from "./Ready.ts"
import { redisVersion, startPrivateRedis } from "./Redis.ts"
import { measureRssGrowth } from "./RssGrowth.ts"

export const footprintBudgetS = 300

const svcBin = path.join(repoRoot, "packages/server/bin/svc")
const cliBin = path.join(repoRoot, "packages/cli/bin/cli")

const clockTicks = 100

const statFields = (pid: number | "self"): Array<string> | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  } catch {
    return undefined
  }
}

/** utime + stime (+ cutime + cstime with `children`) of `pid`, in seconds. */
const cpuS = (pid: number | "self", children: boolean): number => {
  const f = statFields(pid)
  if (f === undefined) return 0
  const at = (i: number) => Number(f[i] ?? 0)
  return (at(11) + at(12) + (children ? at(13) + at(14) : 0)) / clockTicks
}

/** `pid` and every live descendant. */
const tree = (pid: number): Array<number> => {
  const out = [pid]
  for (let i = 0; i < out.length; i++) {
    const current = out[i] as number
    let tasks: Array<string> = []
    try {
      tasks = fs.readdirSync(`/proc/${current}/task`)
    } catch {}
    for (const task of tasks) {
      try {
        const text = fs.readFileSync(`/proc/${current}/task/${task}/children`, "utf8").trim()
        if (text !== "") out.push(...text.split(" ").map(Number))
      } catch {}
    }
  }
  return out
}

const treeCpuS = (pid: number) => tree(pid).reduce((sum, p) => sum + cpuS(p, true), 0)
const treeRssMb = (pid: number) => Math.max(0, ...tree(pid).map((p) => rssMb(p) ?? 0))
const hwmMb = (pid: number): number | undefined => {
  try {
    const match = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return match === null ? undefined : Number(match[1]) / 1024
  } catch {
    return undefined
  }
}

export interface FootprintRun {
  readonly cpuS: number
  readonly wallS: number
  /** Peak RSS of a one-shot command, idle RSS 2 s after ready of a server (largest process of its tree). */
  readonly rssMb: number
  /** The growth row: RSS after the requests minus RSS before them. */
  readonly growthMb?: number
}

export interface FootprintRow {
  readonly id: string
  readonly label: string
  /** The goal in CPU seconds (and wall seconds where it sets one). */
  readonly goal: {
    readonly cpuS?: number
    readonly wallS?: number
    readonly rssMb?: number
    readonly growthMb?: number
  }
  readonly runs: ReadonlyArray<FootprintRun>
  readonly skipped?: string
}

interface Spawned {
  readonly child: ChildProcess
  readonly output: () => string
}

const launch = (command: string, args: ReadonlyArray<string>, cwd: string, env: Record<string, string>): Spawned => {
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  trackChild(child)
  let output = ""
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
  return { child, output: () => output }
}

/**
 * Runs a one-shot command to its end under `sh`, which prints its own `/proc/<pid>/stat` on fd 3
 * once the command has exited: the shell's cutime + cstime is then exactly what the command and
 * everything it waited for spent (the shell's own utime is negligible). Fails unless it exits 0.
 */
const oneShot = async (
  command: string,
  args: ReadonlyArray<string>,
  cwd: string,
  env: Record<string, string> = {}
): Promise<FootprintRun> => {
  const t0 = nowMs()
  const child = spawn("/bin/sh", ["-c", '"$@"; code=$?; cat /proc/$$/stat >&3; exit $code', "sh", command, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe", "pipe"]
  })
  trackChild(child)
  let output = ""
  let stat = ""
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
  ;(child.stdio[3] as NodeJS.ReadableStream).on("data", (chunk: Buffer) => (stat += chunk.toString("utf8")))
  let peak = 0
  const poll = setInterval(() => {
    for (const pid of child.pid === undefined ? [] : tree(child.pid)) peak = Math.max(peak, hwmMb(pid) ?? 0)
  }, 10)
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
  const code = await new Promise<number | null>((resolve) => child.once("close", (c) => resolve(c)))
  const wallS = (nowMs() - t0) / 1000
  clearTimeout(timer)
  clearInterval(poll)
  if (code !== 0) throw new Error(`${path.basename(command)} ${args.join(" ")} exited with ${code}:\n${output}`)
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  const cpu = (Number(fields[13]) + Number(fields[14])) / clockTicks
  if (!Number.isFinite(cpu)) throw new Error(`no /proc stat for ${path.basename(command)}`)
  return { cpuS: cpu, wallS, rssMb: peak }
}

const alive = (pid: number) => fs.existsSync(`/proc/${pid}`)

/** SIGTERM to every process of the tree (npm does not always pass it on), SIGKILL after 20 s. */
const stopTree = async (child: ChildProcess): Promise<void> => {
  if (child.pid === undefined) return
  const pids = tree(child.pid)
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGTERM")
    } catch {}
  }
  const deadline = Date.now() + 20_000
  while (pids.some(alive) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
  for (const pid of pids.filter(alive)) {
    try {
      process.kill(pid, "SIGKILL")
    } catch {}
  }
}

/** Starts a server, waits for `readyUrl` to answer 200, measures, then stops it (SIGTERM). */
const serverRun = async (
  command: string,
  args: ReadonlyArray<string>,
  cwd: string,
  env: Record<string, string>,
  readyUrl: string,
  afterReady?: () => Promise<void>
): Promise<FootprintRun> => {
  const t0 = nowMs()
  const { child, output } = launch(command, args, cwd, env)
  try {
    await waitFor200(readyUrl, child, output, 90_000)
    const wallS = (nowMs() - t0) / 1000
    const pid = child.pid as number
    const cpu = treeCpuS(pid)
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    const rss = treeRssMb(pid)
    await afterReady?.()
    return { cpuS: cpu, wallS, rssMb: rss }
  } finally {
    await stopTree(child)
  }
}

/** Growth requests of the growth row, from 64 keep-alive connections. */
const growthRequests = 20_000

/**
 * The growth row: the embedded default (no flag) in front of the bench upstream, 20,000
 * `_proxy_raw` requests right after ready (no warm-up), RSS before and after, CPU over them.
 */
const measureGrowth = async (): Promise<FootprintRun> => {
  const upstream = await startUpstream("generator")
  try {
    const svc = await startEmbeddedSvc(upstream.origin)
    try {
      const pid = svc.pid as number
      const shape = rawRoute(svc, svc.connections[0])(proxyJsonRequest)
      const cpuBefore = cpuMs(pid) ?? 0
      const growth = await measureRssGrowth({
        pid,
        url: `${svc.origin}${shape.path}`,
        method: "GET",
        headers: shape.headers,
        warmupRequests: 0,
        requests: growthRequests,
        connections: 64
      })
      if (growth === undefined) throw new Error("/proc cannot be read")
      if (growth.errors > 0) throw new Error(`${growth.errors} of ${growth.requests} requests failed`)
      return {
        cpuS: ((cpuMs(pid) ?? 0) - cpuBefore) / 1000,
        wallS: growth.seconds,
        rssMb: growth.rssAfterMb,
        growthMb: growth.growthMb
      }
    } finally {
      await svc.stop()
    }
  } finally {
    await upstream.stop()
  }
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

export interface FootprintOptions {
  readonly runs: number
  readonly progress: (message: string) => void
}

export const measureFootprint = async (options: FootprintOptions): Promise<ReadonlyArray<FootprintRow>> => {
  const rows: Array<FootprintRow> = []
  const { progress } = options
  const repeat = async (
    row: Omit<FootprintRow, "runs" | "skipped">,
    count: number,
    run: (index: number) => Promise<FootprintRun>
  ) => {
    const runs: Array<FootprintRun> = []
    try {
      for (let i = 0; i < count; i++) {
        const result = await run(i)
        progress(
          `  ${row.label} #${i + 1}: ${result.cpuS.toFixed(2)} CPU-s, ${result.wallS.toFixed(2)} s wall, ${result.rssMb.toFixed(0)} MB`
        )
        runs.push(result)
      }
      rows.push({ ...row, runs })
    } catch (error) {
      progress(`  ${row.label}: failed: ${describe(error)}`)
      rows.push({ ...row, runs, skipped: `failed: ${describe(error).split("\n")[0]}` })
    }
  }
  const scratch = await tempDir("svc-bench-footprint-")
  trackDir(scratch)
  const home = path.join(scratch, "home")
  await fsp.mkdir(home)

  progress("footprint: svc --help, cli --help")
  await repeat({ id: "svc-help", label: "svc --help", goal: { cpuS: 0.3 } }, options.runs, () =>
    oneShot(svcBin, ["--help"], scratch)
  )
  await repeat({ id: "cli-help", label: "cli --help", goal: { cpuS: 0.3 } }, options.runs, () =>
    oneShot(cliBin, ["--help"], scratch, { HOME: home })
  )

  // npm start on the embedded default: a first start on a fresh data dir, then restarts on it
  progress("footprint: npm start (embedded default)")
  // `.svc` under the scratch dir: `cli` run there finds the embedded default's keys
  const dataDir = path.join(scratch, ".svc")
  const ports = await freePorts()
  const npmEnv = { ...portEnv(ports), SVC__data_dir: dataDir }
  const ping = `http://127.0.0.1:${ports.api}/ping`
  const npmStart = (after?: () => Promise<void>) => serverRun("npm", ["start"], repoRoot, npmEnv, ping, after)
  await repeat({ id: "start-first", label: "npm start, first start", goal: { cpuS: 4, rssMb: 300 } }, 1, () =>
    npmStart()
  )
  await repeat(
    { id: "start", label: "npm start, data dir present", goal: { cpuS: 1.5, wallS: 2, rssMb: 300 } },
    options.runs,
    () => npmStart()
  )
  // a cli command against the running embedded svc (its admin token is in the data dir)
  progress("footprint: cli list connectors against the embedded svc")
  const cliRuns: Array<FootprintRun> = []
  let cliError: string | undefined
  await npmStart(async () => {
    for (let i = 0; i < options.runs; i++) {
      try {
        const run = await oneShot(
          cliBin,
          ["list", "connectors", "--apiUrl", `http://127.0.0.1:${ports.api}`, "-o", "json"],
          scratch,
          { HOME: home }
        )
        progress(`  cli list connectors #${i + 1}: ${run.cpuS.toFixed(2)} CPU-s, ${run.wallS.toFixed(2)} s wall`)
        cliRuns.push(run)
      } catch (error) {
        cliError = `failed: ${describe(error).split("\n")[0]}`
        break
      }
    }
  }).catch((error: unknown) => {
    cliError = `failed: ${describe(error).split("\n")[0]}`
  })
  rows.push({
    id: "cli-list",
    label: "cli list connectors",
    goal: { cpuS: 0.5 },
    runs: cliRuns,
    ...(cliError === undefined ? {} : { skipped: cliError })
  })

  progress("footprint: RSS growth over 20,000 proxied requests (embedded default, no flag)")
  await repeat(
    { id: "growth", label: "growth over 20,000 _proxy_raw requests", goal: { growthMb: 100 } },
    1,
    measureGrowth
  )

  // PostgreSQL + Redis: svc migrate with nothing to do, an api process, a worker process
  progress("footprint: PostgreSQL + Redis")
  const production = await (async () => {
    if (redisVersion() === undefined) return "redis-server or redis-cli not installed (Debian redis-server)"
    try {
      return await createDatabase("svc_bench_footprint_")
    } catch (error) {
      return error instanceof DatabaseUnavailable ? error.message : `failed: ${describe(error)}`
    }
  })()
  const productionRows = [
    { id: "migrate", label: "svc migrate, nothing to do", goal: { cpuS: 0.5 } },
    { id: "api", label: "svc serve --service api (pg+redis)", goal: { cpuS: 1, rssMb: 150 } },
    { id: "worker", label: "svc serve --service worker (pg+redis)", goal: { cpuS: 1, rssMb: 200 } }
  ] as const
  if (typeof production === "string") {
    for (const row of productionRows) rows.push({ ...row, runs: [], skipped: production })
    return rows
  }
  const redis = await startPrivateRedis()
  try {
    const { dir } = await opsWorkspace(
      "svc-bench-footprint-pg-",
      [
        `database: { provider: postgres, url: "${production.url}" }`,
        `counter_store: { provider: redis, url: "${redis.url}", key_prefix: "svc-bench-${randomUUID()}:" }`
      ],
      90_000
    )
    await repeat(productionRows[0], options.runs, () => oneShot(svcBin, ["migrate"], dir))
    await repeat(productionRows[1], options.runs, async () => {
      const api = await freePorts()
      return serverRun(svcBin, ["serve", "--service", "api"], dir, portEnv(api), `http://127.0.0.1:${api.api}/ping`)
    })
    await repeat(productionRows[2], options.runs, async () => {
      const health = await freePort()
      return serverRun(
        svcBin,
        ["serve", "--service", "worker"],
        dir,
        { SVC__worker__port: String(health), SVC__cluster__runner__port: String(await freePort()) },
        `http://127.0.0.1:${health}/healthz`
      )
    })
  } finally {
    await redis.stop()
    await production.drop().catch(() => undefined)
  }
  return rows
}

const range = (values: ReadonlyArray<number>, digits: number) => {
  if (values.length === 0) return "-"
  const min = Math.min(...values)
  const max = Math.max(...values)
  return min.toFixed(digits) === max.toFixed(digits)
    ? min.toFixed(digits)
    : `${min.toFixed(digits)}–${max.toFixed(digits)}`
}

/** The footprint table: per case, CPU-s, wall and RSS ranges over its runs, and the goal. */
export const formatFootprint = (rows: ReadonlyArray<FootprintRow>): string => {
  const header = ["case", "runs", "CPU-s", "wall s", "RSS MB", "growth MB", "goal"]
  const lines = rows.map((row) => {
    const goal = [
      ...(row.goal.cpuS === undefined ? [] : [`≤ ${row.goal.cpuS} CPU-s`]),
      ...(row.goal.wallS === undefined ? [] : [`≤ ${row.goal.wallS} s`]),
      ...(row.goal.rssMb === undefined ? [] : [`≤ ${row.goal.rssMb} MB idle`]),
      ...(row.goal.growthMb === undefined ? [] : [`≤ ${row.goal.growthMb} MB growth`])
    ].join(", ")
    if (row.runs.length === 0) return [row.label, "0", row.skipped ?? "-", "", "", "", goal]
    const growth = row.runs.flatMap((r) => (r.growthMb === undefined ? [] : [r.growthMb]))
    return [
      row.label,
      String(row.runs.length),
      range(
        row.runs.map((r) => r.cpuS),
        2
      ),
      range(
        row.runs.map((r) => r.wallS),
        2
      ),
      range(
        row.runs.map((r) => r.rssMb),
        0
      ),
      range(growth, 1),
      goal + (row.skipped === undefined ? "" : ` (${row.skipped})`)
    ]
  })
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? "").length)))
  const format = (cells: ReadonlyArray<string>) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd()
  return [
    "Footprint (CPU-s: user + system from /proc, to ready or to exit, over the requests for growth; RSS: peak of a command, idle of a server, after the requests for growth)",
    format(header),
    ...lines.map(format),
    ""
  ].join("\n")
}
