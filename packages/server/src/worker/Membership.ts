/**
 * How this process belongs to the cluster (ARCHITECTURE "Processes"), chosen from the
 * configuration and the services it runs:
 * - a worker on PostgreSQL is a socket runner at `cluster.runner` (its own address per worker);
 * - a worker on the embedded database is the one in-process runner, with no listener;
 * - a process without the worker service (api, admin-api, public) is client-only: it calls
 *   entities and starts workflows, owns no shards and opens no listener.
 * With `cluster.tls`, the runner socket and every connection to a runner are mutual TLS.
 * `RunnerStatus` reports the runner's state for the worker's `/healthz`.
 */
import * as ClusterRuntime from "@svc/cluster/ClusterRuntime"
import type { ServiceId } from "@svc/domain/Auth"
import type { RunnerState } from "@svc/domain/http/SystemApi"
import type * as RunnerTransport from "@svc/cluster/RunnerTransport"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { readFile } from "../config/Files.ts"
import { listenError } from "../config/ListenError.ts"
import type { ResolvedConfig } from "../config/SvcConfig.ts"
import { DirectSql } from "../stores/Database.ts"

/** The state of this process's runner, or undefined when it runs none or cannot tell (storage down). */
export class RunnerStatus extends Context.Service<
  RunnerStatus,
  { readonly report: Effect.Effect<RunnerState | undefined> }
>()("@svc/server/worker/RunnerStatus") {
  /** No runner in this process. */
  static readonly layerNone: Layer.Layer<RunnerStatus> = Layer.succeed(
    RunnerStatus,
    RunnerStatus.of({ report: Effect.succeed(undefined) })
  )
}

const runnerStatus = Layer.effect(
  RunnerStatus,
  Effect.map(Effect.context<Effect.Services<typeof ClusterRuntime.runnerReport>>(), (context) =>
    RunnerStatus.of({
      report: ClusterRuntime.runnerReport.pipe(
        Effect.provide(context),
        Effect.timeout(Duration.seconds(2)),
        Effect.catchCause(() => Effect.succeed(undefined))
      )
    })
  )
)

/** The PEM files of `cluster.tls`, read once at start (a missing file fails the start with its path). */
const readTls = Effect.fn("Membership.readTls")(function* (config: ResolvedConfig) {
  const tls = config.cluster.tls
  if (tls === undefined) return undefined
  const material: RunnerTransport.TlsMaterial = {
    ca: (yield* readFile("cluster TLS CA certificate", tls.caPath)).toString("utf8"),
    cert: (yield* readFile("cluster TLS certificate", tls.certPath)).toString("utf8"),
    key: Redacted.make((yield* readFile("cluster TLS key", tls.keyPath)).toString("utf8"))
  }
  return material
})

const options = (
  config: ResolvedConfig,
  tls: RunnerTransport.TlsMaterial | undefined
): ClusterRuntime.ClusterOptions => ({
  tls,
  shardsPerGroup: config.cluster.shardsPerGroup,
  shardLockRefreshInterval: Duration.millis(config.cluster.shardLockRefreshIntervalMs),
  shardLockExpiration: Duration.millis(config.cluster.shardLockExpirationMs),
  refreshAssignmentsInterval: Duration.millis(config.cluster.refreshAssignmentsIntervalMs),
  runnerHealthCheckInterval: Duration.millis(config.cluster.runnerHealthCheckIntervalMs),
  entityMessagePollInterval: Duration.millis(config.cluster.entityMessagePollIntervalMs),
  entityMaxIdleTime: Duration.millis(config.cluster.entityMaxIdleTimeMs)
})

/**
 * The cluster runtime of this process and its `RunnerStatus`; message storage is on the main
 * `SqlClient`, runner storage (the shard locks, which need a session) on `DirectSql`, and the
 * runner transport is mutual TLS when `cluster.tls` is configured.
 */
export const layer = (config: ResolvedConfig, services: ReadonlyArray<ServiceId>) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const tls = yield* readTls(config)
      const runnerStorageSql = yield* DirectSql
      return layerWith(config, services, { ...options(config, tls), runnerStorageSql })
    })
  )

/** A runner socket that cannot bind fails with one line naming `cluster.runner.port` (or `.host`). */
const namingRunnerKey =
  (config: ResolvedConfig) =>
  <ROut, E, RIn>(layer: Layer.Layer<ROut, E, RIn>): Layer.Layer<ROut, unknown, RIn> =>
    Layer.catch(layer, (error) => {
      const { host, port } = config.cluster.runner
      const tag = typeof error === "object" && error !== null && "_tag" in error ? error._tag : undefined
      const failure: unknown = tag === "SocketServerError" ? listenError("cluster.runner", host, port, error) : error
      return Layer.effectContext(Effect.fail(failure) as Effect.Effect<Context.Context<ROut>, unknown>)
    })

const layerWith = (
  config: ResolvedConfig,
  services: ReadonlyArray<ServiceId>,
  clusterOptions: ClusterRuntime.ClusterOptions
) => {
  if (!services.includes("worker")) {
    return Layer.merge(ClusterRuntime.layerClient(clusterOptions), RunnerStatus.layerNone)
  }
  const runtime =
    config.database.provider === "pglite"
      ? ClusterRuntime.layerSingle(clusterOptions)
      : ClusterRuntime.layerRunner({
          ...clusterOptions,
          listen: { host: config.cluster.runner.host, port: config.cluster.runner.port },
          advertise: { host: config.cluster.runner.advertisedHost, port: config.cluster.runner.port }
        }).pipe(namingRunnerKey(config))
  return runnerStatus.pipe(Layer.provideMerge(runtime))
}
