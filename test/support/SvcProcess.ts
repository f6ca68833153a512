/**
 * Starts the real `svc` executable as a child process for black-box tests: free loopback ports,
 * a temporary working directory, output captured, and a finaliser that always stops it.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url))
/** The built `svc` (scripts/build.ts, from packages/server/src/main.ts; the test run's global setup builds it). */
export const svcMain = path.join(repoRoot, "dist/svc.js")

/** A free TCP port on 127.0.0.1 (bound then released). */
const bindable = (port: number): Promise<number | undefined> =>
  new Promise((resolve) => {
    const server = net.createServer()
    server.once("error", () => resolve(undefined))
    server.listen(port, "127.0.0.1", () => {
      const address = server.address()
      const bound = typeof address === "object" && address !== null ? address.port : undefined
      server.close(() => resolve(bound))
    })
  })

/**
 * A loopback port free right now, for a process the test starts next. Picked at random below
 * Linux's ephemeral range (32768–60999): a port the kernel handed out for `listen(0)` is one it
 * also hands out as the local port of outgoing connections, and the many connections the tests'
 * processes open to PostgreSQL and Redis took such ports between the pick and the bind
 * (EADDRINUSE at start). Falls back to the kernel's choice after 50 taken picks.
 */
export const freePort = async (): Promise<number> => {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await bindable(20_000 + Math.floor(Math.random() * 12_700))
    if (port !== undefined) return port
  }
  const port = await bindable(0)
  if (port === undefined) throw new Error("no free loopback port")
  return port
}

export interface Ports {
  readonly api: number
  readonly adminApi: number
  readonly public: number
  readonly worker: number
  /** The worker's cluster runner socket (used when the worker runs on PostgreSQL). */
  readonly runner: number
  /** The Prometheus scrape listener (`telemetry.prometheus.port`; only bound when enabled). */
  readonly metrics: number
}

export const freePorts = async (): Promise<Ports> => ({
  api: await freePort(),
  adminApi: await freePort(),
  public: await freePort(),
  worker: await freePort(),
  runner: await freePort(),
  metrics: await freePort()
})

export const portEnv = (ports: Ports): Record<string, string> => ({
  SVC__api__port: String(ports.api),
  SVC__admin_api__port: String(ports.adminApi),
  SVC__public__port: String(ports.public),
  SVC__worker__port: String(ports.worker),
  SVC__cluster__runner__port: String(ports.runner),
  SVC__telemetry__prometheus__port: String(ports.metrics)
})

export const tempDir = (prefix: string) => fs.mkdtemp(path.join(os.tmpdir(), prefix))

export interface RunningSvc {
  readonly child: ChildProcess
  readonly output: () => string
  /** Resolves with the exit code once the process has exited. */
  readonly exited: Promise<number | null>
  readonly stop: (signal?: NodeJS.Signals) => Promise<number | null>
}

/** Spawns `svc <args>` in `cwd`; the caller must `stop()` it (tests do so in a finally). */
export const startSvc = (
  args: ReadonlyArray<string>,
  options: { cwd: string; env?: Record<string, string> }
): RunningSvc => {
  const child = spawn(process.execPath, [svcMain, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8")
  })
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8")
  })
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const stop = async (signal: NodeJS.Signals = "SIGTERM") => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal)
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
      const code = await exited
      clearTimeout(timer)
      return code
    }
    return exited
  }
  return { child, output: () => output, exited, stop }
}

/** Polls `url` until it answers (any status) or the deadline passes. */
export const waitForHttp = async (url: string, running: RunningSvc, timeoutMs = 60_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (running.child.exitCode !== null) {
      throw new Error(`svc exited with ${running.child.exitCode} before answering:\n${running.output()}`)
    }
    try {
      await fetch(url)
      return
    } catch {
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  throw new Error(`svc did not answer ${url} within ${timeoutMs} ms:\n${running.output()}`)
}

/** Runs `svc <args>` to completion and returns its exit code and output. */
export const runSvc = async (
  args: ReadonlyArray<string>,
  options: { cwd: string; env?: Record<string, string>; timeoutMs?: number }
): Promise<{ code: number | null; output: string }> => {
  const running = startSvc(args, options)
  const timer = setTimeout(() => running.child.kill("SIGKILL"), options.timeoutMs ?? 60_000)
  const code = await running.exited
  clearTimeout(timer)
  return { code, output: running.output() }
}
