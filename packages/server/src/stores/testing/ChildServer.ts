/**
 * A server process a test started (redis-server, pgbouncer, …): its output kept for error
 * messages, whether it still runs, and a stop that escalates to SIGKILL. One place for what every
 * test helper that spawns a server needs.
 */
import type { ChildProcess } from "node:child_process"

export interface ChildServer {
  readonly child: ChildProcess
  /** What the process wrote on stdout and stderr (each chunk after `prefix`), the newest 100 KB or more. */
  readonly output: () => string
  /** Resolves when the process has exited (or could not be started). */
  readonly exited: Promise<void>
  readonly alive: () => boolean
  /** Sends `name`, then SIGKILL after `graceMs`; resolves once the process has exited. */
  readonly signal: (name: NodeJS.Signals, graceMs?: number) => Promise<void>
}

/** Watches `child`, spawned with stdout and stderr piped. */
export const watchChild = (child: ChildProcess, prefix = ""): ChildServer => {
  let output = ""
  const append = (chunk: Buffer) => {
    output += `${prefix}${chunk.toString("utf8")}`
    if (output.length > 200_000) output = output.slice(-100_000)
  }
  child.stdout?.on("data", append)
  child.stderr?.on("data", append)
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => resolve())
    child.once("error", (error) => {
      output += `\n${String(error)}`
      resolve()
    })
  })
  const alive = () => child.exitCode === null && child.signalCode === null
  const signal = async (name: NodeJS.Signals, graceMs = 5_000) => {
    if (!alive()) return
    child.kill(name)
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs)
    await exited
    clearTimeout(timer)
  }
  return { child, output: () => output, exited, alive, signal }
}
