/**
 * A worker's SIGTERM on a loaded machine (issue: "Could not release shards" floods): two runners
 * on PostgreSQL share the shards, entities are active on both, four child processes keep both
 * cores busy, then one worker is stopped with SIGTERM. It must exit 0, write fewer than 10 log
 * lines after the signal and no stack trace, and the other worker must end up owning every shard.
 * Every process started here is bounded in time and killed in afterAll.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/Api.ts"
import { type ProductionWorkspace, productionWorkspace } from "../support/ProductionWorkspace.ts"
import { freePort, type RunningSvc, runSvc, startSvc, waitForHttp } from "../support/SvcProcess.ts"

const clientMain = fileURLToPath(new URL("../support/clusterClient.ts", import.meta.url))

interface RunnerHealth {
  readonly runner?: { readonly ownedShards: number; readonly totalShards: number; readonly activeEntities: number }
}

interface Worker {
  readonly healthPort: number
  readonly process: RunningSvc
}

const totalShards = 600
/** Two per core: the cores stay saturated whatever else the machine runs. */
const burnerCount = 4

const svcTimings = JSON.stringify({
  shardsPerGroup: totalShards,
  shardLockRefreshInterval: 2_000,
  shardLockExpiration: 10_000,
  refreshAssignmentsInterval: 1_000,
  runnerHealthCheckInterval: 5_000,
  entityMessagePollInterval: 1_000
})

/** A CPU-burning child process, killed after `ms` at the latest. */
const burner = (ms: number): ChildProcess => {
  const child = spawn(process.execPath, ["-e", "for(;;){}"], { stdio: "ignore" })
  const timer = setTimeout(() => child.kill("SIGKILL"), ms)
  child.once("exit", () => clearTimeout(timer))
  return child
}

/** Runs `ops` entity calls through a client-only cluster member (test/support/clusterClient.ts). */
const touchEntities = (url: string, ids: ReadonlyArray<string>) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, [clientMain, url, svcTimings], { stdio: ["pipe", "pipe", "pipe"] })
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`entity calls did not finish in 60 s:\n${log}`))
    }, 60_000)
    let log = ""
    let buffer = ""
    let answered = 0
    child.stderr?.on("data", (chunk: Buffer) => {
      log += chunk.toString("utf8")
    })
    child.stdout?.on("data", (chunk: Buffer) => {
      buffer += chunk.toString("utf8")
      for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl)
        buffer = buffer.slice(nl + 1)
        if (!line.startsWith("{")) continue
        const message = JSON.parse(line) as { ready?: boolean; ok?: boolean; error?: string }
        if (message.ready) {
          const commands = ids.map((id, i) => JSON.stringify({ id: i + 1, op: "report429", connectionId: id }))
          child.stdin?.write(`${commands.join("\n")}\n`)
        } else if (message.ok !== true) {
          child.kill("SIGKILL")
          reject(new Error(`entity call failed: ${message.error}`))
        } else if (++answered === ids.length) {
          clearTimeout(timer)
          child.kill("SIGKILL")
          resolve()
        }
      }
    })
    child.once("exit", () => {
      if (answered < ids.length) reject(new Error(`cluster client exited:\n${log}`))
    })
  })

describe("worker SIGTERM while both cores are busy", () => {
  let workspace: ProductionWorkspace | undefined
  const workers: Array<Worker> = []
  const burners: Array<ChildProcess> = []

  const health = async (worker: Worker): Promise<RunnerHealth> => {
    try {
      return (await (await fetch(`http://127.0.0.1:${worker.healthPort}/healthz`)).json()) as RunnerHealth
    } catch {
      return {}
    }
  }

  const startWorker = async (): Promise<Worker> => {
    const healthPort = await freePort()
    const runnerPort = await freePort()
    const process = startSvc(["serve", "--service", "worker"], {
      cwd: workspace!.dir,
      env: { SVC__worker__port: String(healthPort), SVC__cluster__runner__port: String(runnerPort) }
    })
    const worker = { healthPort, process }
    workers.push(worker)
    await waitForHttp(`http://127.0.0.1:${healthPort}/ping`, process)
    return worker
  }

  beforeAll(async () => {
    workspace = await productionWorkspace("svc-e2e-worker-stop-")
    // 600 shards, so each of the two workers holds about 300 (the default total of one worker).
    await workspace.writeConfig([`cluster: { shards_per_group: ${totalShards} }`])
    const migrated = await runSvc(["migrate"], { cwd: workspace.dir })
    expect(migrated.code, migrated.output).toBe(0)
    await startWorker()
    await startWorker()
    const shares = await eventually(
      () => Promise.all(workers.map(health)),
      (all) =>
        all.every((h) => (h.runner?.ownedShards ?? 0) > 0) &&
        all.reduce((n, h) => n + (h.runner?.ownedShards ?? 0), 0) === totalShards
    )
    expect(shares.reduce((n, h) => n + (h.runner?.ownedShards ?? 0), 0)).toBe(totalShards)
  }, 120_000)

  afterAll(async () => {
    for (const child of burners) child.kill("SIGKILL")
    await Promise.all(workers.map((w) => w.process.stop("SIGKILL")))
    await workspace?.close()
  })

  it("exits 0 with fewer than 10 log lines and no stack trace; the other worker takes every shard", async () => {
    const [stopping, staying] = [workers[0]!, workers[1]!]
    const ids = Array.from({ length: 40 }, () => `cxn_${randomBytes(13).toString("hex").slice(0, 26)}`)
    await touchEntities(workspace!.url, ids)
    const before = await health(stopping)
    expect(before.runner?.activeEntities ?? 0).toBeGreaterThan(0)
    console.log(
      `stopping a worker holding ${before.runner?.ownedShards} shards, ${before.runner?.activeEntities} entities`
    )
    for (let i = 0; i < burnerCount; i++) burners.push(burner(60_000))
    // Let the burners take the cores before the signal.
    await new Promise((resolve) => setTimeout(resolve, 500))
    const offset = stopping.process.output().length
    const signalled = Date.now()
    const code = await stopping.process.stop("SIGTERM")
    const exitMs = Date.now() - signalled
    // Still under load: the other worker takes every shard.
    const owned = await eventually(
      () => health(staying),
      (h) => h.runner?.ownedShards === totalShards
    )
    const takeoverMs = Date.now() - signalled
    for (const child of burners) child.kill("SIGKILL")
    const after = stopping.process.output().slice(offset)
    const lines = after.split("\n").filter((line) => line.trim() !== "")
    console.log(
      `worker SIGTERM under load: exit ${code} after ${exitMs} ms, ${lines.length} log line(s); ` +
        `the other worker owned all ${totalShards} shards ${takeoverMs} ms after the signal\n${after.slice(0, 3000)}`
    )
    expect(code, after).toBe(0)
    expect(lines.length, after).toBeLessThan(10)
    expect(after).not.toMatch(/\n\s+at /)
    expect(owned.runner?.ownedShards).toBe(totalShards)
  }, 120_000)
})
