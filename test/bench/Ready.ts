/**
 * Starting the processes under test for the bench: `svc` through test/support/SvcProcess.ts and
 * plain Node scripts, each tracked for cleanup, each awaited until its `/ping` answers 200.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs/promises"
import * as http from "node:http"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { freePort, freePorts, type Ports, portEnv, type RunningSvc, startSvc, tempDir } from "../support/SvcProcess.ts"
import { trackChild, trackDir } from "./Children.ts"

export const nowMs = (): number => Number(process.hrtime.bigint()) / 1e6

const getStatus = (url: string): Promise<number> =>
  new Promise((resolve) => {
    const request = http.get(url, { agent: false, timeout: 1_000 }, (response) => {
      response.resume()
      resolve(response.statusCode ?? 0)
    })
    request.on("timeout", () => request.destroy())
    request.on("error", () => resolve(0))
  })

/** Polls `url` every 5 ms until it answers 200; fails if `child` exits first or the deadline passes. */
export const waitFor200 = async (url: string, child: ChildProcess, describe: () => string, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`process exited (${child.exitCode ?? child.signalCode}) before ${url} answered:\n${describe()}`)
    }
    if ((await getStatus(url)) === 200) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms:\n${describe()}`)
}

/** A fresh temp dir (removed on exit) and four free loopback ports. */
export const svcWorkspace = async (): Promise<{ dir: string; ports: Ports }> => {
  const dir = await tempDir("svc-bench-")
  trackDir(dir)
  return { dir, ports: await freePorts() }
}

/** The admin token svc writes to `<dir>/.svc/admin.token` on its first start (polled up to 20 s). */
export const readToken = async (dir: string): Promise<string> => {
  const file = path.join(dir, ".svc/admin.token")
  const deadline = Date.now() + 20_000
  for (;;) {
    const token = (await fs.readFile(file, "utf8").catch(() => "")).trim()
    if (token !== "") return token
    if (Date.now() > deadline) throw new Error(`no admin token in ${file}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export interface ReadySvc {
  readonly svc: RunningSvc
  /** Milliseconds from spawn to the first 200 on the api service's `/ping`. */
  readonly readyMs: number
}

/** `svc serve` on the embedded default in `dir`, awaited until the api service's `/ping` is 200. */
export const startSvcReady = async (dir: string, ports: Ports, env: Record<string, string> = {}): Promise<ReadySvc> => {
  const t0 = nowMs()
  const svc = startSvc(["serve"], { cwd: dir, env: { ...portEnv(ports), ...env } })
  trackChild(svc.child)
  await waitFor200(`http://127.0.0.1:${ports.api}/ping`, svc.child, svc.output)
  return { svc, readyMs: nowMs() - t0 }
}

export interface NodeChild {
  readonly port: number
  readonly pid: number | undefined
  readonly stop: () => Promise<void>
}

/** Runs a Node script from test/bench with `BENCH_PORT` set, awaited until its `/ping` is 200. */
export const startNodeScript = async (script: string, env: Record<string, string> = {}): Promise<NodeChild> => {
  const port = await freePort()
  const file = fileURLToPath(new URL(script, import.meta.url))
  const child = spawn(process.execPath, [file], {
    env: { ...process.env, ...env, BENCH_PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"]
  })
  trackChild(child)
  let stderr = ""
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8")
  })
  const stop = stopper(child)
  await waitFor200(`http://127.0.0.1:${port}/ping`, child, () => stderr, 15_000)
  return { port, pid: child.pid, stop }
}

/** Stops `child` with SIGTERM, then SIGKILL after 5 s; resolves once it has exited. Call before it can exit. */
export const stopper = (child: ChildProcess): (() => Promise<void>) => {
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  return async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000)
      await exited
      clearTimeout(timer)
    }
  }
}
