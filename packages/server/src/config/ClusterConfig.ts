/** The `cluster` block (docs/cluster.md): a worker's runner address, the shard count and timings. */
import type { ConfigFile } from "./ConfigSchema.ts"
import { intervalMs } from "./Durations.ts"
import type { ResolvedCluster } from "./SvcConfig.ts"

const wildcardHosts: ReadonlySet<string> = new Set(["0.0.0.0", "::", "[::]"])

/** The cluster block with its defaults; the advertised host must be one other processes can dial. */
export const resolveCluster = (file: ConfigFile, problems: Array<string>): ResolvedCluster => {
  const cluster = file.cluster
  const host = cluster?.runner?.host ?? "127.0.0.1"
  const advertisedHost = cluster?.runner?.advertised_host ?? host
  if (wildcardHosts.has(advertisedHost)) {
    problems.push(
      `cluster.runner.advertised_host: ${advertisedHost} cannot be dialled; set the address other processes reach this worker at`
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
