/**
 * The launcher (issue 30), black-box: `svc serve` replaces itself in place with Node started with
 * the heap flags it chose (same PID: the process the test spawned is the one serving, its command
 * line carries the flags), SIGTERM still ends it with exit 0, and a SIGKILL leaves no process
 * behind holding its ports. `SVC_NODE_OPTIONS` replaces the computed flags; a short command
 * (`svc migrate`) is not relaunched.
 */
import * as fs from "node:fs"
import * as net from "node:net"
import { afterAll, describe, expect, it } from "vitest"
import { relayGcFlag } from "../../packages/server/src/outbound/RelayedChunks.ts"
import { heapFlags, memoryLimit } from "../../packages/server/src/Launcher.ts"
import {
  freePorts,
  portEnv,
  type RunningSvc,
  runSvc,
  startSvc,
  svcMain,
  tempDir,
  waitForHttp
} from "../support/SvcProcess.ts"

const started: Array<RunningSvc> = []
const dirs: Array<string> = []

afterAll(async () => {
  for (const svc of started) await svc.stop("SIGKILL")
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const cmdline = (pid: number) => fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")

/** Whether something still accepts connections on the port. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, "127.0.0.1")
    socket.once("connect", () => {
      socket.destroy()
      resolve(true)
    })
    socket.once("error", () => resolve(false))
  })

describe("the launcher", () => {
  it("serves from the same PID with the chosen heap flags; SIGTERM exits 0; SIGKILL leaves no port held", async () => {
    const dir = await tempDir("svc-launcher-")
    dirs.push(dir)
    const ports = await freePorts()
    const run = (env: Record<string, string> = {}) => {
      const svc = startSvc(["serve"], { cwd: dir, env: { ...portEnv(ports), ...env } })
      started.push(svc)
      return svc
    }

    const first = run()
    await waitForHttp(`http://127.0.0.1:${ports.api}/livez`, first, 90_000)
    const pid = first.child.pid as number
    const flags = heapFlags(memoryLimit().bytes)
    const args = cmdline(pid)
    for (const flag of flags) expect(args).toContain(flag)
    expect(args).toContain(relayGcFlag)
    expect(args.filter((arg) => arg === svcMain)).toHaveLength(1)
    expect(await first.stop("SIGTERM")).toBe(0)
    expect(first.output()).not.toContain("Error")

    const second = run({ SVC_NODE_OPTIONS: "--max-old-space-size=200" })
    await waitForHttp(`http://127.0.0.1:${ports.api}/livez`, second, 90_000)
    const secondArgs = cmdline(second.child.pid as number)
    expect(secondArgs).toContain("--max-old-space-size=200")
    expect(secondArgs.some((arg) => arg.startsWith("--max-semi-space-size"))).toBe(false)
    second.child.kill("SIGKILL")
    await second.exited
    for (const port of [ports.api, ports.adminApi, ports.public, ports.worker]) {
      expect(await listening(port)).toBe(false)
    }
    // No svc process of this data dir is left (the launcher is the server, not its parent).
    const left = fs
      .readdirSync("/proc")
      .filter((entry) => /^\d+$/.test(entry))
      .filter((entry) => {
        try {
          return fs.readlinkSync(`/proc/${entry}/cwd`) === fs.realpathSync(dir)
        } catch {
          return false
        }
      })
    expect(left).toEqual([])
  }, 240_000)

  it("does not relaunch a short command", async () => {
    const dir = await tempDir("svc-launcher-short-")
    dirs.push(dir)
    // The preload prints the heap flags this process runs with; a missing config ends it at once.
    const probe = `${dir}/probe.mjs`
    fs.writeFileSync(
      probe,
      'process.stderr.write("execArgv:" + JSON.stringify(process.execArgv.filter((a) => a.startsWith("--max"))) + "\\n")\n'
    )
    const result = await runSvc(["migrate", "--config", "missing.yaml"], {
      cwd: dir,
      env: { NODE_OPTIONS: `--import=${probe}` }
    })
    expect(result.code).toBe(2)
    expect(result.output).toContain("execArgv:[]")
    expect(result.output.match(/execArgv:/g)).toHaveLength(1)
  }, 60_000)
})
