/**
 * Start-up of the embedded default: `svc serve` in a fresh empty directory (first start: creates
 * the embedded database, runs migrations, generates keys and the TLS certificate) until the api
 * service's `/ping` answers 200, then a graceful stop, then a second start on the same directory.
 */
import type { RunningSvc } from "../support/SvcProcess.ts"
import { nowMs, startSvcReady, svcWorkspace } from "./Ready.ts"

export interface ColdStartResult {
  /** Spawn to first 200 on the api `/ping`, fresh directory. */
  readonly firstStartMs: number
  /** SIGTERM to exit of the first process. */
  readonly stopMs: number
  /** Spawn to first 200 on the api `/ping`, same directory (state already initialised). */
  readonly warmRestartMs: number
}

const timedStop = async (svc: RunningSvc): Promise<number> => {
  const t0 = nowMs()
  const code = await svc.stop()
  if (code !== 0) throw new Error(`svc exited with ${code} on SIGTERM:\n${svc.output()}`)
  return nowMs() - t0
}

export const measureColdStart = async (): Promise<ColdStartResult> => {
  const { dir, ports } = await svcWorkspace()
  const first = await startSvcReady(dir, ports)
  const stopMs = await timedStop(first.svc)
  const second = await startSvcReady(dir, ports)
  await timedStop(second.svc)
  return { firstStartMs: first.readyMs, stopMs, warmRestartMs: second.readyMs }
}
