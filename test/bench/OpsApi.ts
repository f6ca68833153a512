/**
 * A production-mode bench cluster's workspace and api, used as the `ops` system actor (an HS256
 * token signed with the workspace's `secret`): `opsWorkspace` writes and migrates the workspace;
 * `opsApi`'s `call` answers the status and the parsed body, `expect` throws with the body's start
 * unless the status is the one expected.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { opsConfigLines, opsToken, writeOpsKeys } from "../support/OpsActor.ts"
import { freePort, freePorts, portEnv, type RunningSvc, runSvc, startSvc, tempDir } from "../support/SvcProcess.ts"
import { trackChild, trackDir } from "./Children.ts"
import { waitFor200 } from "./Ready.ts"

/**
 * A fresh directory (removed when the bench ends) holding an HS256 secret, a root key and
 * `svc.yaml`: the `config` lines (database, counter store, …), the root key and the `ops` actor
 * with every permission; `svc migrate` has run in it (`migrateMs`: how long that took).
 */
export const opsWorkspace = async (prefix: string, config: ReadonlyArray<string>, migrateTimeoutMs: number) => {
  const dir = await tempDir(prefix)
  trackDir(dir)
  const secret = await writeOpsKeys(dir)
  await fs.writeFile(path.join(dir, "svc.yaml"), [...config, ...opsConfigLines].join("\n"))
  const started = performance.now()
  const migrated = await runSvc(["migrate"], { cwd: dir, timeoutMs: migrateTimeoutMs })
  if (migrated.code !== 0) throw new Error(`svc migrate exited with ${migrated.code}:\n${migrated.output}`)
  return { dir, secret, migrateMs: performance.now() - started }
}

export interface Answer<T> {
  readonly status: number
  readonly body: T
}

/**
 * Starts one worker and one api process in workspace `dir` (each added to `processes`, which the
 * caller stops) and answers the api's origin once both are ready: the worker's `/healthz`
 * answers 200 once its runner is registered (and, alone, owns every shard).
 */
export const startOpsCluster = async (dir: string, processes: Array<RunningSvc>): Promise<string> => {
  const healthPort = await freePort()
  const worker = startSvc(["serve", "--service", "worker"], {
    cwd: dir,
    env: { SVC__worker__port: String(healthPort), SVC__cluster__runner__port: String(await freePort()) }
  })
  trackChild(worker.child)
  processes.push(worker)
  const ports = await freePorts()
  const api = startSvc(["serve", "--service", "api"], { cwd: dir, env: portEnv(ports) })
  trackChild(api.child)
  processes.push(api)
  await waitFor200(`http://127.0.0.1:${healthPort}/healthz`, worker.child, worker.output, 60_000)
  const origin = `http://127.0.0.1:${ports.api}`
  await waitFor200(`${origin}/ping`, api.child, api.output, 60_000)
  return origin
}

export const opsApi = async (origin: string, secret: Uint8Array, timeoutMs: number) => {
  const token = await opsToken(secret)
  const call = async <T>(method: string, urlPath: string, body?: unknown): Promise<Answer<T>> => {
    const response = await fetch(`${origin}${urlPath}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs)
    })
    const text = await response.text()
    return { status: response.status, body: (text === "" ? undefined : JSON.parse(text)) as T }
  }
  const expect = async <T>(answer: Promise<Answer<T>>, status: number, what: string): Promise<T> => {
    const got = await answer
    if (got.status !== status) throw new Error(`${what}: ${got.status} ${JSON.stringify(got.body).slice(0, 300)}`)
    return got.body
  }
  return { call, expect }
}
