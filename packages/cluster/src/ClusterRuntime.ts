/**
 * Cluster runtime layers (ARCHITECTURE "Processes"): effect/cluster sharding with SQL message and
 * runner storage on the ambient `SqlClient` plus the cluster workflow engine, in three shapes:
 * - `layerSingle`: one in-process runner owning every shard, no listener (the embedded default);
 * - `layerRunner`: a runner over the socket transport (plain, or mutual TLS with `tls`) at an
 *   explicit address (a worker process);
 * - `layerClient`: client-only (api, admin-api, public processes): calls entities and starts
 *   workflows, owns no shards, opens no listener.
 * Configuration comes only from the options, never from the environment. Entity layers
 * (`Entity.toLayer`) and workflow layers (`Workflow.toLayer`) are provided with a runner layer.
 */
import { Effect, Equal, Layer, Option, Semaphore } from "effect"
import type { Duration } from "effect"
import {
  ClusterWorkflowEngine,
  type MessageStorage,
  RunnerAddress,
  RunnerHealth,
  Runners,
  RunnerStorage,
  ShardId,
  Sharding,
  ShardingConfig,
  SocketRunner,
  SqlMessageStorage,
  SqlRunnerStorage
} from "effect/cluster"
import { Digest } from "effect/crypto"
import { RpcSerialization } from "effect/rpc"
import { SqlClient } from "effect/sql"
import type { WorkflowEngine } from "effect/workflow"
import * as RunnerTransport from "./RunnerTransport.ts"

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
  /** How often held shard locks (advisory locks) are refreshed; `layerSingle` holds none. Default 10 s. */
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
 * One in-process runner that owns every shard: SQL message storage on the ambient `SqlClient`
 * (what makes workflows durable across restarts), in-memory runner storage, no runner transport,
 * and the cluster workflow engine. Migrations of the cluster tables run on build.
 *
 * Runner storage is in memory because one process is the whole cluster: there is no other runner
 * to hand shards to, so shard locks protect nothing. Stored leases did harm on PGlite, whose one
 * connection serialises every query: under a burst of workflow traffic the lease refresh waited
 * past its timeout, the runner declared its locks lost and interrupted every entity, and some
 * workflow runs were never resumed (tasks left active after their work had committed).
 * Configuration comes only from `options` (never from the environment). Releasing the layer
 * stops the runner gracefully: entities finish or are interrupted, shards and the runner
 * registration are released.
 */
export const layerSingle = (
  options?: SingleOptions
): Layer.Layer<
  ClusterServices | RunnerStorage.RunnerStorage | ShardingConfig.ShardingConfig,
  never,
  SqlClient.SqlClient
> => {
  const prefix = { prefix: options?.tablePrefix ?? singleDefaults.tablePrefix }
  const sharding = Sharding.layer.pipe(
    Layer.provideMerge(Runners.layerNoop),
    Layer.provideMerge(SqlMessageStorage.layerWith(prefix)),
    Layer.provide(RunnerHealth.layerNoop),
    Layer.provideMerge(RunnerStorage.layerMemory),
    Layer.provideMerge(ShardingConfig.layer(shardingConfig(options))),
    Layer.provide(Digest.layerWebCrypto)
  )
  return ClusterWorkflowEngine.layer.pipe(Layer.provideMerge(sharding))
}

/** A host and port. */
export interface Address {
  readonly host: string
  readonly port: number
}

/** Options shared by every process of one cluster (they must agree across processes). */
export interface ClusterOptions extends SingleOptions {
  /** Shards per shard group; the same on every process. Default 300. */
  readonly shardsPerGroup?: number | undefined
  /** How often one runner pings the others and marks unreachable ones unhealthy. Default 1 min. */
  readonly runnerHealthCheckInterval?: Duration.Input | undefined
  /**
   * Mutual TLS on the runner transport (the runner's socket and every connection to a runner);
   * plain TCP without it. Every process of one cluster must agree.
   */
  readonly tls?: RunnerTransport.TlsMaterial | undefined
  /**
   * The client of runner storage (registrations and shard locks): advisory locks and session
   * settings need a session, so behind a transaction-mode pooler this is a direct connection.
   * Default: the ambient `SqlClient`, which message storage always uses.
   */
  readonly runnerStorageSql?: SqlClient.SqlClient | undefined
}

/** SQL runner storage on `options.runnerStorageSql`, else on the ambient `SqlClient`. */
const runnerStorage = (prefix: { readonly prefix: string }, options: ClusterOptions) => {
  const storage = Layer.orDie(SqlRunnerStorage.layerWith(prefix))
  const sql = options.runnerStorageSql
  return sql === undefined ? storage : Layer.provide(storage, Layer.succeed(SqlClient.SqlClient, sql))
}

/** Options of a worker's socket runner. */
export interface RunnerOptions extends ClusterOptions {
  /** Where the runner's socket server binds. */
  readonly listen: Address
  /** The address other processes dial (and the runner's identity in runner storage). */
  readonly advertise: Address
}

/**
 * Shard lock releases one at a time. Sharding releases every shard in its own fiber, and on
 * PostgreSQL each release is two statements on the one lock connection, under a deadline of the
 * lock refresh interval that counts the time spent queued behind the others. Handing 300 shards
 * off on a busy machine queued 600 statements at once: the later ones passed their deadline,
 * each logged "Could not release shards" with a stack trace and replaced the lock connection,
 * and the retries met the same queue. One at a time, each release's deadline covers only its
 * own two statements; the lock refresh, which uses the same connection, waits behind at most one.
 */
export const serialShardReleases: Layer.Layer<RunnerStorage.RunnerStorage, never, RunnerStorage.RunnerStorage> =
  Layer.effect(
    RunnerStorage.RunnerStorage,
    Effect.gen(function* () {
      const storage = yield* RunnerStorage.RunnerStorage
      const one = yield* Semaphore.make(1)
      return RunnerStorage.RunnerStorage.of({
        register: storage.register,
        unregister: storage.unregister,
        getRunners: storage.getRunners,
        setRunnerHealth: storage.setRunnerHealth,
        acquire: storage.acquire,
        refresh: storage.refresh,
        release: (address, shardId) => one.withPermits(1)(storage.release(address, shardId)),
        releaseAll: storage.releaseAll
      })
    })
  )

const clusterShardingConfig = (options: ClusterOptions): ShardingOverrides => {
  const config = shardingConfig(options)
  if (options.shardsPerGroup !== undefined) config.shardsPerGroup = options.shardsPerGroup
  if (options.runnerHealthCheckInterval !== undefined) {
    config.runnerHealthCheckInterval = options.runnerHealthCheckInterval
  }
  return config
}

/**
 * A runner over the socket transport: binds `listen`, registers as `advertise` in runner storage,
 * takes its share of the shards (advisory locks on PostgreSQL), pings its peers, and runs the
 * cluster workflow engine. Every process of the cluster must use the same storage prefix, shard
 * count and serialization (schema binary). Releasing the layer unregisters the runner and hands
 * its shards over.
 */
export const layerRunner = (
  options: RunnerOptions
): Layer.Layer<
  ClusterServices | RunnerStorage.RunnerStorage | ShardingConfig.ShardingConfig,
  unknown,
  SqlClient.SqlClient
> => {
  const prefix = { prefix: options.tablePrefix ?? singleDefaults.tablePrefix }
  const config = ShardingConfig.layer({
    ...clusterShardingConfig(options),
    runnerAddress: Option.some(RunnerAddress.make(options.advertise.host, options.advertise.port)),
    runnerListenAddress: Option.some(RunnerAddress.make(options.listen.host, options.listen.port))
  })
  const health = RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc))
  const sharding = SocketRunner.layer.pipe(
    Layer.provide([health, RunnerTransport.layerSocketServer(options.tls)]),
    // One runner storage (one lock connection), also exposed for the health report.
    Layer.provideMerge(serialShardReleases.pipe(Layer.provide(runnerStorage(prefix, options)))),
    Layer.provideMerge(SqlMessageStorage.layerWith(prefix)),
    Layer.provide(RunnerTransport.layerClientProtocol(options.tls)),
    Layer.provideMerge(config),
    Layer.provide([RpcSerialization.layerSchemaBinary(), Digest.layerWebCrypto])
  )
  return ClusterWorkflowEngine.layer.pipe(Layer.provideMerge(sharding))
}

/**
 * Client-only membership: sends entity messages to the runners that own their shards and starts
 * workflows through the shared storage; registers no runner, owns no shard, opens no listener.
 */
export const layerClient = (options: ClusterOptions = {}): Layer.Layer<ClusterServices, never, SqlClient.SqlClient> => {
  const prefix = { prefix: options.tablePrefix ?? singleDefaults.tablePrefix }
  const sharding = SocketRunner.layerClientOnly.pipe(
    Layer.provide(runnerStorage(prefix, options)),
    Layer.provideMerge(SqlMessageStorage.layerWith(prefix)),
    Layer.provide(RunnerTransport.layerClientProtocol(options.tls)),
    Layer.provide([
      ShardingConfig.layer({ ...clusterShardingConfig(options), runnerAddress: Option.none() }),
      RpcSerialization.layerSchemaBinary(),
      Digest.layerWebCrypto
    ])
  )
  return ClusterWorkflowEngine.layer.pipe(Layer.provideMerge(sharding))
}

/** What a runner reports about itself (`/healthz` of a worker). */
export interface RunnerReport {
  /** The advertised address, `host:port`. */
  readonly address: string
  /** Present in runner storage with a fresh heartbeat. */
  readonly registered: boolean
  /** Marked healthy by the cluster's health check. */
  readonly healthy: boolean
  readonly shuttingDown: boolean
  readonly ownedShards: number
  readonly totalShards: number
  readonly activeEntities: number
}

/** The runner's state: registration, health and the shards it owns right now. */
export const runnerReport: Effect.Effect<
  RunnerReport,
  unknown,
  Sharding.Sharding | ShardingConfig.ShardingConfig | RunnerStorage.RunnerStorage
> = Effect.gen(function* () {
  const sharding = yield* Sharding.Sharding
  const config = yield* ShardingConfig.ShardingConfig
  const storage = yield* RunnerStorage.RunnerStorage
  let ownedShards = 0
  for (const group of config.assignedShardGroups) {
    for (let id = 1; id <= config.shardsPerGroup; id++) {
      if (sharding.hasShardId(ShardId.make(group, id))) ownedShards++
    }
  }
  const self = Option.getOrUndefined(config.runnerAddress)
  const runners = yield* storage.getRunners
  const entry = self === undefined ? undefined : runners.find(([runner]) => Equal.equals(runner.address, self))
  return {
    address: self === undefined ? "" : `${self.host}:${self.port}`,
    registered: entry !== undefined,
    healthy: entry?.[1] ?? false,
    shuttingDown: yield* sharding.isShutdown,
    ownedShards,
    totalShards: config.assignedShardGroups.length * config.shardsPerGroup,
    activeEntities: yield* sharding.activeEntityCount
  }
})
