/**
 * svc in its production shape for the proxy rows: `svc serve --service api` alone on a fresh
 * PostgreSQL database (`svc_bench_proxy_<random>`, dropped on stop) with its counter store (and so
 * the rate-limit and cool-down stores) on a private `redis-server`, which nothing else uses: its
 * `INFO commandstats` counts only what this api process sends. No worker runs: a proxied request
 * that the upstream answers with a 2xx never calls the `Connection` entity, and a worker's own
 * Redis traffic would only be noise here. Skipped (not failed) without PostgreSQL or redis-server.
 */
import { randomUUID } from "node:crypto"
import { opsToken } from "../support/OpsActor.ts"
import { freePorts, portEnv, startSvc } from "../support/SvcProcess.ts"
import { trackChild } from "./Children.ts"
import { createDatabase, DatabaseUnavailable } from "./Cluster.ts"
import { pin } from "./Cpu.ts"
import { opsWorkspace } from "./OpsApi.ts"
import { waitFor200 } from "./Ready.ts"
import { commandDelta, redisVersion, startPrivateRedis } from "./Redis.ts"
import { type StoreProbe, TargetUnavailable } from "./Target.ts"

/** How long the idle api process is watched after set-up, for the background commands. */
const idleWindowMs = 2_000

export interface ProductionSvc<A> {
  readonly origin: string
  readonly authorization: string
  readonly created: A
  readonly store: StoreProbe
  /** The svc process (CPU time and memory per row). */
  readonly pid: number | undefined
  readonly stop: () => Promise<void>
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** Starts the api process on PostgreSQL + Redis, runs `setup`, then watches Redis idle for 2 s. */
export const startProductionSvc = async <A>(options: {
  readonly upstreamOrigin: string
  readonly forwarded: () => Promise<number>
  readonly setup: (origin: string, authorization: string, upstreamOrigin: string) => Promise<A>
  /** Added to the svc process's environment. */
  readonly env?: Readonly<Record<string, string>> | undefined
}): Promise<ProductionSvc<A>> => {
  const version = redisVersion()
  if (version === undefined)
    throw new TargetUnavailable("redis-server or redis-cli not installed (Debian redis-server)")
  const database = await createDatabase("svc_bench_proxy_").catch((error: unknown) => {
    throw error instanceof DatabaseUnavailable ? new TargetUnavailable(error.message) : error
  })
  const cleanups: Array<() => Promise<void>> = [() => database.drop()]
  const stop = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined)
  }
  try {
    const redis = await startPrivateRedis()
    cleanups.push(redis.stop)
    // beside the load generator, like the upstream: the api process keeps its CPU to itself
    pin(redis.pid, "generator")
    const { dir, secret } = await opsWorkspace(
      "svc-bench-production-",
      [
        `database: { provider: postgres, url: "${database.url}" }`,
        `counter_store: { provider: redis, url: "${redis.url}", key_prefix: "svc-bench-${randomUUID()}:" }`,
        "outbound: { allow_private_networks: true }"
      ],
      60_000
    )
    const ports = await freePorts()
    const svc = startSvc(["serve", "--service", "api"], { cwd: dir, env: { ...portEnv(ports), ...options.env } })
    trackChild(svc.child)
    cleanups.push(async () => void (await svc.stop()))
    const origin = `http://127.0.0.1:${ports.api}`
    await waitFor200(`${origin}/ping`, svc.child, svc.output, 60_000)
    pin(svc.child.pid, "servers")
    const token = await opsToken(secret, "4h")
    const authorization = `Bearer ${token}`
    const created = await options.setup(origin, authorization, options.upstreamOrigin)
    const before = await redis.commands()
    await new Promise((resolve) => setTimeout(resolve, idleWindowMs))
    const after = await redis.commands()
    const store: StoreProbe = {
      label: `private redis-server ${version}`,
      commands: redis.commands,
      monitor: redis.monitor,
      forwarded: options.forwarded,
      idle: { ms: idleWindowMs, commands: commandDelta(before, after) }
    }
    return { origin, authorization, created, store, pid: svc.child.pid, stop }
  } catch (error) {
    await stop()
    throw new Error(`PostgreSQL + Redis svc: ${describe(error)}`)
  }
}
