/**
 * The stores of a process (ARCHITECTURE "Processes"): the SQL clients, the counter, cool-down and
 * rate-limit stores, every repository, the readiness checks of `/healthz`, and the start-up
 * preparation (migrations or the schema check, then the configured actors synchronised).
 */
import { ActorRepo } from "@svc/sql/ActorRepo"
import { ConnectionControlRepo } from "@svc/sql/ConnectionControlRepo"
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import { ConnectorRepo } from "@svc/sql/ConnectorRepo"
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import { LabelReconciler } from "@svc/sql/LabelReconciler"
import { MaintenanceRunRepo } from "@svc/sql/MaintenanceRunRepo"
import * as Migrations from "@svc/sql/Migrations"
import { NotificationRepo } from "@svc/sql/NotificationRepo"
import { ProbeStateRepo } from "@svc/sql/ProbeStateRepo"
import { ResourceRepo } from "@svc/sql/ResourceRepo"
import { checkSchema, ping } from "@svc/sql/SchemaCheck"
import { SearchRepo } from "@svc/sql/SearchRepo"
import { TaskRepo } from "@svc/sql/TaskRepo"
import { WebhookRepo } from "@svc/sql/WebhookRepo"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import type { ResolvedConfig } from "../config/SvcConfig.ts"
import { ChangeFeed } from "./ChangeFeed.ts"
import { CoolDownStore } from "./CoolDownStore.ts"
import { CounterStore, type RedisCounterStoreOptions } from "./CounterStore.ts"
import * as Database from "./Database.ts"
import { RateLimitStore } from "./RateLimitStore.ts"
import { AppMetricsSql, DirectSql } from "./Database.ts"
import { Health } from "./Health.ts"

/** The Redis settings of a Redis or Redis Cluster counter store (the cluster from its seed nodes). */
const redisOptions = (
  store: Exclude<ResolvedConfig["counterStore"], { provider: "memory" }>
): RedisCounterStoreOptions => ({
  url: Redacted.make(store.url),
  keyPrefix: store.keyPrefix,
  ...(store.provider === "redis-cluster" ? { nodes: store.nodes } : {}),
  ...(store.tls === undefined ? {} : { tls: store.tls })
})

/** The configured counter store: Redis or Redis Cluster in production, in memory on the embedded default. */
export const counterStoreLayer = (config: ResolvedConfig) =>
  config.counterStore.provider === "memory"
    ? CounterStore.layerMemory
    : CounterStore.layerRedis(redisOptions(config.counterStore))

/**
 * The configured cool-down store (spec 2.9) and rate-limit store (spec 4.6) on the counter store's
 * Redis (or cluster) and key prefix, or in memory: there the rate-limit store reads the one
 * in-process map the `Connection` entity publishes to.
 */
export const limitStoresLayer = (config: ResolvedConfig) => {
  if (config.counterStore.provider === "memory") {
    return RateLimitStore.layerMemory.pipe(Layer.provideMerge(CoolDownStore.layerMemory))
  }
  const redis = redisOptions(config.counterStore)
  return Layer.merge(CoolDownStore.layerRedis(redis), RateLimitStore.layerRedis(redis))
}

/**
 * Connection changes between processes: Redis pub/sub on a Redis or Redis Cluster counter store;
 * in process with the in-memory one (one process holds every cache and every writer).
 */
export const changeFeedLayer = (config: ResolvedConfig) =>
  config.counterStore.provider === "memory"
    ? ChangeFeed.layerLocal
    : ChangeFeed.layerRedis(redisOptions(config.counterStore))

/**
 * Applies the main and app-metrics migrations over the direct (session) connections; returns which
 * ran. On PostgreSQL it holds the migration lock, so processes migrating at once apply them once:
 * the others wait, then find nothing to apply. `onWait` runs when another process holds the lock.
 */
export const migrate = Effect.fn("Stores.migrate")(function* (config: ResolvedConfig, onWait: Effect.Effect<void>) {
  const direct = yield* DirectSql
  const metricsDirect =
    config.appMetricsDatabase === "main"
      ? direct
      : yield* Database.directClient(config.appMetricsDatabase, yield* AppMetricsSql)
  const run = Effect.gen(function* () {
    const main = yield* Migrations.migrateMain.pipe(Effect.provideService(SqlClient.SqlClient, direct))
    const metrics = yield* Migrations.migrateAppMetrics.pipe(Effect.provideService(SqlClient.SqlClient, metricsDirect))
    return { main, metrics }
  })
  return config.database.provider === "postgres" ? yield* Migrations.withMigrationLock(direct, onWait, run) : yield* run
}, Effect.scoped)

/** Every repository of the main database. */
const repositories = Layer.mergeAll(
  ActorRepo.layer,
  ResourceRepo.layer,
  ConnectorRepo.layer,
  SearchRepo.layer,
  LabelReconciler.layer,
  ConnectionRepo.layer,
  ProbeStateRepo.layer,
  DataKeyRepo.layer,
  NotificationRepo.layer,
  MaintenanceRunRepo.layer,
  ConnectionControlRepo.layer,
  TaskRepo.layer,
  WebhookRepo.layer
)

/** Readiness of the database(s) and the counter store. */
const healthLayer = (config: ResolvedConfig) =>
  Health.layer(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const metrics = yield* AppMetricsSql
      const counters = yield* CounterStore
      return [
        { name: "database", check: ping(sql) },
        ...(config.appMetricsDatabase === "main" ? [] : [{ name: "appMetricsDatabase", check: ping(metrics) }]),
        { name: "counterStore", check: counters.ping() }
      ]
    })
  )

/**
 * Migrations (or, when not applying them, the check that the schema is current), then the
 * configured actors synchronised with their system labels materialised.
 */
const startup = (config: ResolvedConfig, applyMigrations: boolean) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      if (applyMigrations) {
        const applied = yield* migrate(config, Effect.logInfo("another process is applying migrations; waiting for it"))
        for (const [id, name] of [...applied.main, ...applied.metrics]) {
          yield* Effect.logInfo(`applied migration ${String(id).padStart(4, "0")}_${name}`)
        }
      } else {
        yield* checkSchema(yield* SqlClient.SqlClient, yield* AppMetricsSql)
      }
      const repo = yield* ActorRepo
      const actors = yield* repo.syncConfigured(
        config.auth.actors.map((a) => ({
          externalId: a.external_id,
          namespace: a.namespace ?? "root",
          permissions: a.permissions,
          ...(a.name === undefined ? {} : { name: a.name }),
          ...(a.annotations === undefined ? {} : { annotations: a.annotations }),
          ...(a.labels === undefined ? {} : { labels: a.labels })
        }))
      )
      yield* Effect.logInfo(`synced ${actors.length} configured actor(s)`)
      // A newly configured actor has no system labels yet (spec 2.3): materialise them now.
      if (actors.some((actor) => actor.labels["svc/act/-/id"] !== actor.id)) {
        const reconciler = yield* LabelReconciler
        yield* reconciler.all()
      }
    })
  )

/**
 * The complete store layer: clients, counter store, repositories and readiness checks, built
 * after the start-up preparation has run (migrations on the embedded default or with `--migrate`).
 */
export const layer = (config: ResolvedConfig, options: { readonly applyMigrations: boolean }) =>
  Layer.mergeAll(
    repositories,
    healthLayer(config),
    startup(config, options.applyMigrations).pipe(Layer.provide(repositories))
  ).pipe(
    Layer.provideMerge(
      Layer.mergeAll(
        Database.layer(config.database, config.appMetricsDatabase),
        counterStoreLayer(config),
        limitStoresLayer(config),
        changeFeedLayer(config)
      )
    )
  )
