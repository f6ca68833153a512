/**
 * A private `redis-server` for the bench's PostgreSQL + Redis target (a free loopback port, no
 * persistence, tracked for cleanup), and its command counters from `INFO commandstats` read with
 * `redis-cli`, so that what the server under test sends is counted without any other work on the
 * machine's shared Redis mixed in. `INFO commandstats` also counts every command a Lua script runs
 * (`redis.call`), so `monitor` tells the commands clients sent from those scripts ran (`MONITOR`
 * shows the latter as `[0 lua]`); it is costly for Redis, so the bench uses it only during warm-ups.
 */
import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process"
import * as net from "node:net"
import { promisify } from "node:util"
import { freePort } from "../support/SvcProcess.ts"
import { trackChild } from "./Children.ts"
import type { CommandCounts, Monitor } from "./Target.ts"

const run = promisify(execFile)

/** `redis-server`'s version (e.g. `7.0.15`), or `undefined` when redis-server or redis-cli is missing. */
export const redisVersion = (): string | undefined => {
  const cli = spawnSync("redis-cli", ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
  if (cli.error !== undefined) return undefined
  const probe = spawnSync("redis-server", ["--version"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
  if (probe.error !== undefined) return undefined
  return /v=(\S+)/.exec(probe.stdout)?.[1] ?? "unknown version"
}

export interface PrivateRedis {
  readonly pid: number | undefined
  /** `redis://127.0.0.1:<port>` */
  readonly url: string
  /**
   * Calls and failed calls per command (lower case, e.g. `evalsha`) since the server started. Each
   * read is one `INFO` through `redis-cli` (which sends nothing else); the reads this function made
   * are subtracted from `info`, and commands left at zero are dropped.
   */
  readonly commands: () => Promise<CommandCounts>
  /** Starts a `MONITOR` connection; `stop` ends it and answers what it saw. */
  readonly monitor: () => Promise<Monitor>
  /** SIGTERM, SIGKILL after 5 s; resolves once the process has exited. */
  readonly stop: () => Promise<void>
}

const count = (into: Record<string, { calls: number; failed: number }>, name: string) => {
  const known = into[name]
  into[name] = { calls: (known?.calls ?? 0) + 1, failed: 0 }
}

/**
 * `MONITOR` on `port`: counts each `<time> [<db> <source>] "<command>" …` line until stopped. Under
 * load Redis writes MONITOR lines behind the commands, so `stop` sends an `ECHO` marker from
 * another connection and ends once the marker's line has arrived (5 s at most), not counting it.
 */
const startMonitor = (port: number, cli: (...args: ReadonlyArray<string>) => Promise<string>): Promise<Monitor> =>
  new Promise((resolve, reject) => {
    const marker = `bench-monitor-end-${process.hrtime.bigint()}`
    let seenMarker: () => void = () => {}
    const markerSeen = new Promise<void>((done) => {
      seenMarker = done
    })
    const sent: Record<string, { calls: number; failed: number }> = {}
    const inScripts: Record<string, { calls: number; failed: number }> = {}
    const socket = net.connect({ host: "127.0.0.1", port })
    let buffer = ""
    let ready = false
    const timer = setTimeout(() => socket.destroy(new Error("MONITOR not answered in 5 s")), 5_000)
    const closed = new Promise<void>((done) => socket.once("close", () => done()))
    socket.once("error", (error) => {
      clearTimeout(timer)
      if (!ready) reject(error)
    })
    socket.on("data", (chunk: Buffer) => {
      buffer += chunk.toString("latin1")
      let from = 0
      for (let newline = buffer.indexOf("\n"); newline >= 0; newline = buffer.indexOf("\n", from)) {
        const line = buffer.slice(from, newline)
        from = newline + 1
        if (ready) {
          const match = /^\+\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]+)"/.exec(line)
          if (match === null) continue
          if (line.includes(marker)) seenMarker()
          else count(match[1] === "lua" ? inScripts : sent, match[2]!.toLowerCase())
          continue
        }
        clearTimeout(timer)
        if (!line.startsWith("+OK")) {
          socket.destroy()
          reject(new Error(`MONITOR answered ${line.slice(0, 200)}`))
          return
        }
        ready = true
        resolve({
          stop: async () => {
            await cli("ECHO", marker)
            let timer: NodeJS.Timeout | undefined
            await Promise.race([
              markerSeen,
              new Promise((done) => {
                timer = setTimeout(done, 5_000)
              })
            ])
            clearTimeout(timer)
            socket.destroy()
            await closed
            return { sent, inScripts }
          }
        })
      }
      buffer = buffer.slice(from)
    })
    socket.write("MONITOR\r\n")
  })

/** Parses the `cmdstat_<name>:calls=…,usec=…,rejected_calls=…,failed_calls=…` lines of `INFO commandstats`. */
export const parseCommandStats = (text: string): Record<string, { calls: number; failed: number }> => {
  const counts: Record<string, { calls: number; failed: number }> = {}
  for (const line of text.split(/\r?\n/)) {
    const match = /^cmdstat_([^:]+):(.*)$/.exec(line.trim())
    if (match === null) continue
    const fields = Object.fromEntries(
      (match[2] ?? "").split(",").map((pair) => {
        const [key = "", value = ""] = pair.split("=")
        return [key, Number(value)]
      })
    )
    const calls = fields.calls ?? 0
    const failed = (fields.failed_calls ?? 0) + (fields.rejected_calls ?? 0)
    counts[match[1]!.toLowerCase()] = { calls, failed }
  }
  return counts
}

/** Starts a private redis-server on a free 127.0.0.1 port and waits (10 s at most) until it answers PING. */
export const startPrivateRedis = async (): Promise<PrivateRedis> => {
  const port = await freePort()
  const child: ChildProcess = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "yes"],
    { stdio: ["ignore", "pipe", "pipe"] }
  )
  trackChild(child)
  let output = ""
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-4000)
  }
  child.stdout?.on("data", keep)
  child.stderr?.on("data", keep)
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => resolve())
    child.once("error", () => resolve())
  })
  const alive = () => child.exitCode === null && child.signalCode === null
  const stop = async () => {
    if (!alive()) return
    child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
    await exited
    clearTimeout(timer)
  }
  const cli = async (...args: ReadonlyArray<string>) =>
    (await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], { timeout: 5_000 })).stdout
  const deadline = Date.now() + 10_000
  for (;;) {
    if (!alive()) throw new Error(`redis-server exited before answering:\n${output}`)
    if ((await cli("PING").catch(() => "")).trim() === "PONG") break
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`redis-server did not answer on ${port} within 10 s:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  let reads = 0
  const commands = async (): Promise<CommandCounts> => {
    const counts = parseCommandStats(await cli("INFO", "commandstats"))
    // INFO counts itself once it has answered: this read shows the earlier ones, not itself.
    const info = counts.info
    if (info !== undefined) counts.info = { ...info, calls: info.calls - reads }
    reads++
    return Object.fromEntries(Object.entries(counts).filter(([, c]) => c.calls !== 0 || c.failed !== 0))
  }
  return { pid: child.pid, url: `redis://127.0.0.1:${port}`, commands, monitor: () => startMonitor(port, cli), stop }
}

/** `after − before` per command (commands that did not move are dropped). */
export const commandDelta = (before: CommandCounts, after: CommandCounts): CommandCounts =>
  Object.fromEntries(
    Object.entries(after).flatMap(([name, a]) => {
      const b = before[name] ?? { calls: 0, failed: 0 }
      const calls = a.calls - b.calls
      const failed = a.failed - b.failed
      return calls === 0 && failed === 0 ? [] : [[name, { calls, failed }]]
    })
  )

/** The total of calls in `counts`. */
export const totalCalls = (counts: CommandCounts): number => Object.values(counts).reduce((sum, c) => sum + c.calls, 0)

/**
 * The deltas of a measured window split into the commands clients sent and those scripts ran, in
 * the proportion `MONITOR` saw for each command in the warm-up (a command it did not see there
 * counts as sent).
 */
export const splitBySource = (
  measured: CommandCounts,
  warmup: { readonly sent: CommandCounts; readonly inScripts: CommandCounts }
): { sent: CommandCounts; inScripts: CommandCounts } => {
  const sent: Record<string, { calls: number; failed: number }> = {}
  const inScripts: Record<string, { calls: number; failed: number }> = {}
  for (const [name, c] of Object.entries(measured)) {
    const bySent = warmup.sent[name]?.calls ?? 0
    const byScript = warmup.inScripts[name]?.calls ?? 0
    const share = bySent + byScript === 0 ? 1 : bySent / (bySent + byScript)
    const calls = Math.round(c.calls * share)
    if (calls > 0 || (share > 0 && c.failed > 0)) sent[name] = { calls, failed: share > 0 ? c.failed : 0 }
    if (c.calls - calls > 0) inScripts[name] = { calls: c.calls - calls, failed: share > 0 ? 0 : c.failed }
  }
  return { sent, inScripts }
}
