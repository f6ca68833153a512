/** The `cluster` block (docs/cluster.md): a worker's runner address, its TLS, the shard count and timings. */
import { isIPv4 } from "node:net"
import * as path from "node:path"
import type { ConfigFile } from "./ConfigSchema.ts"
import { intervalMs } from "./Durations.ts"
import type { ResolvedCluster } from "./SvcConfig.ts"

const wildcardHosts: ReadonlySet<string> = new Set(["0.0.0.0", "::", "[::]"])

/** True for a host only this machine reaches: `localhost`, 127.0.0.0/8, `::1`. */
export const isLoopbackHost = (host: string): boolean =>
  host === "localhost" || host === "::1" || host === "[::1]" || (isIPv4(host) && host.startsWith("127."))

/**
 * The cluster block with its defaults; the advertised host must be one other processes can dial.
 * On PostgreSQL (where workers are socket runners) a runner socket beyond loopback needs
 * `cluster.tls`: the runner port executes the RPCs of whoever reaches it.
 */
export const resolveCluster = (file: ConfigFile, base: string, problems: Array<string>): ResolvedCluster => {
  const cluster = file.cluster
  const host = cluster?.runner?.host ?? "127.0.0.1"
  const advertisedHost = cluster?.runner?.advertised_host ?? host
  if (wildcardHosts.has(advertisedHost)) {
    problems.push(
      `cluster.runner.advertised_host: ${advertisedHost} cannot be dialled; set the address other processes reach this worker at`
    )
  }
  const tls = cluster?.tls
  if (tls === undefined && file.database?.provider === "postgres" && !isLoopbackHost(host)) {
    problems.push(
      `cluster.runner.host: ${host} is not a loopback address; a runner reachable from other hosts needs cluster.tls (mutual TLS, see docs/cluster.md)`
    )
  }
  const at = (key: string) => `cluster.${key}`
  const refresh = intervalMs(
    cluster?.shard_lock_refresh_interval,
    at("shard_lock_refresh_interval"),
    2_000,
    100,
    problems
  )
  const expiration = intervalMs(cluster?.shard_lock_expiration, at("shard_lock_expiration"), 10_000, 300, problems)
  if (expiration < 3 * refresh) {
    problems.push("cluster.shard_lock_expiration: must be at least 3 times cluster.shard_lock_refresh_interval")
  }
  return {
    runner: { host, port: cluster?.runner?.port ?? 34431, advertisedHost },
    tls:
      tls === undefined
        ? undefined
        : {
            caPath: path.resolve(base, tls.ca),
            certPath: path.resolve(base, tls.cert),
            keyPath: path.resolve(base, tls.key)
          },
    shardsPerGroup: cluster?.shards_per_group ?? 300,
    shardLockRefreshIntervalMs: refresh,
    shardLockExpirationMs: expiration,
    refreshAssignmentsIntervalMs: intervalMs(
      cluster?.refresh_assignments_interval,
      at("refresh_assignments_interval"),
      1_000,
      50,
      problems
    ),
    runnerHealthCheckIntervalMs: intervalMs(
      cluster?.runner_health_check_interval,
      at("runner_health_check_interval"),
      5_000,
      100,
      problems
    ),
    entityMessagePollIntervalMs: intervalMs(
      cluster?.entity_message_poll_interval,
      at("entity_message_poll_interval"),
      1_000,
      50,
      problems
    ),
    entityMaxIdleTimeMs: intervalMs(cluster?.entity_max_idle_time, at("entity_max_idle_time"), 60_000, 1_000, problems)
  }
}
