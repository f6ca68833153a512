/**
 * Cluster runner layers: effect/cluster sharding with SQL message and runner storage on the
 * ambient `SqlClient` (PostgreSQL, or PGlite in the embedded default) plus the cluster workflow
 * engine. Entity layers (`Entity.toLayer`) and workflow layers (`Workflow.toLayer`) are provided
 * with one of these layers to run.
 */
import { Layer } from "effect"
import type { Duration } from "effect"
import {
  ClusterWorkflowEngine,
  type MessageStorage,
  RunnerHealth,
  Runners,
  Sharding,
  ShardingConfig,
  SqlMessageStorage,
  SqlRunnerStorage
} from "effect/cluster"
import { Digest } from "effect/crypto"
import type { SqlClient } from "effect/sql"
import type { WorkflowEngine } from "effect/workflow"

/** Options of the single-process runner; every field has a production default. */
export interface SingleOptions {
  /** Prefix of the cluster tables (`<prefix>_messages`, `<prefix>_replies`, `<prefix>_locks`, …). Default `cluster`. */
  readonly tablePrefix?: string | undefined
  /** How often stored, unprocessed messages are polled (deferred deliveries, missed notifications). Default 1 s. */
  readonly entityMessagePollInterval?: Duration.Input | undefined
  /** How often a caller polls for the reply of a persisted message. Default 200 ms. */
  readonly entityReplyPollInterval?: Duration.Input | undefined
  /** How often shard assignments are refreshed from runner storage. Default 3 s. */
  readonly refreshAssignmentsInterval?: Duration.Input | undefined
  /** How often held shard locks (advisory locks, or table leases on PGlite) are refreshed. Default 10 s. */
  readonly shardLockRefreshInterval?: Duration.Input | undefined
  /** After this long without a refresh a shard lock is free for another runner. Default 35 s. */
  readonly shardLockExpiration?: Duration.Input | undefined
  /** Idle time after which an entity is passivated (its state is rehydrated on the next message). Default 1 min. */
  readonly entityMaxIdleTime?: Duration.Input | undefined
  /** Longest wait for an entity to finish its in-flight work on shutdown. Default 15 s. */
  readonly entityTerminationTimeout?: Duration.Input | undefined
  /** Any further `ShardingConfig` override, applied last. */
  readonly shardingConfig?: Partial<ShardingConfig.ShardingConfig["Service"]> | undefined
}

/** Services a cluster runner layer provides to entity and workflow layers and to their callers. */
export type ClusterServices =
  | Sharding.Sharding
  | Runners.Runners
  | MessageStorage.MessageStorage
  | WorkflowEngine.WorkflowEngine

/** Production defaults of the single-process runner (library defaults, a quicker message poll). */
export const singleDefaults = {
  tablePrefix: "cluster",
  entityMessagePollInterval: "1 second"
} as const

type ShardingOverrides = {
  -readonly [K in keyof ShardingConfig.ShardingConfig["Service"]]?: ShardingConfig.ShardingConfig["Service"][K]
}

const timingKeys = [
  "entityReplyPollInterval",
  "refreshAssignmentsInterval",
  "shardLockRefreshInterval",
  "shardLockExpiration",
  "entityMaxIdleTime",
  "entityTerminationTimeout"
] as const

// Only defined options override the library defaults (`ShardingConfig.layer` spreads over them).
const shardingConfig = (options: SingleOptions | undefined): ShardingOverrides => {
  const config: ShardingOverrides = {
    entityMessagePollInterval: options?.entityMessagePollInterval ?? singleDefaults.entityMessagePollInterval
  }
  for (const key of timingKeys) {
    const value = options?.[key]
    if (value !== undefined) config[key] = value
  }
  return { ...config, ...options?.shardingConfig }
}

/**
 * One in-process runner that owns every shard: SQL message storage and SQL runner storage
 * (advisory locks on PostgreSQL, table leases on PGlite) on the ambient `SqlClient`, no runner
 * transport, and the cluster workflow engine. Migrations of the cluster tables run on build.
 * Configuration comes only from `options` (never from the environment). Releasing the layer
 * stops the runner gracefully: entities finish or are interrupted, shards and the runner
 * registration are released.
 */
export const layerSingle = (options?: SingleOptions): Layer.Layer<ClusterServices, never, SqlClient.SqlClient> => {
  const prefix = { prefix: options?.tablePrefix ?? singleDefaults.tablePrefix }
  const sharding = Sharding.layer.pipe(
    Layer.provideMerge(Runners.layerNoop),
    Layer.provideMerge(SqlMessageStorage.layerWith(prefix)),
    Layer.provide([Layer.orDie(SqlRunnerStorage.layerWith(prefix)), RunnerHealth.layerNoop]),
    Layer.provide([ShardingConfig.layer(shardingConfig(options)), Digest.layerWebCrypto])
  )
  return ClusterWorkflowEngine.layer.pipe(Layer.provideMerge(sharding))
}
