/**
 * `svc serve` and `svc migrate`: assembles stores, migrations, the actor sync, authentication,
 * the cluster runner and the selected HTTP servers into one layer graph (ARCHITECTURE "Processes").
 */
import { Console, Duration, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { ServiceId } from "@svc/domain/Auth"
import * as ClusterRuntime from "@svc/cluster/ClusterRuntime"
import * as LabelPropagationLive from "@svc/cluster/LabelPropagationLive"
import * as ProbeMonitorLive from "@svc/cluster/ProbeMonitorLive"
import * as ReencryptionLive from "@svc/cluster/ReencryptionLive"
import * as TokenRefreshSweepLive from "@svc/cluster/TokenRefreshSweepLive"
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import { ProbeStateRepo } from "@svc/sql/ProbeStateRepo"
import { ActorRepo } from "@svc/sql/ActorRepo"
import { ConnectorRepo } from "@svc/sql/ConnectorRepo"
import { NotificationRepo } from "@svc/sql/NotificationRepo"
import { LabelReconciler } from "@svc/sql/LabelReconciler"
import { ResourceRepo } from "@svc/sql/ResourceRepo"
import { SearchRepo } from "@svc/sql/SearchRepo"
import * as Migrations from "@svc/sql/Migrations"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { ResolvedConfig, SigningKey } from "./config/SvcConfig.ts"
import { SvcConfig } from "./config/SvcConfig.ts"
import { ConnectionSecrets } from "./connections/ConnectionSecrets.ts"
import { AuthorizationFlows } from "./connections/AuthorizationFlows.ts"
import { Credentials } from "./connections/Credentials.ts"
import { OAuthClient } from "./connections/OAuthClient.ts"
import * as RefreshSweep from "./connections/RefreshSweep.ts"
import { TokenRefresher } from "./connections/TokenRefresher.ts"
import * as ProbeScheduler from "./connections/ProbeScheduler.ts"
import { Probes } from "./connections/Probes.ts"
import * as Servers from "./http/Servers.ts"
import { RequestEventSink } from "./events/RequestEventBuffer.ts"
import { Recordings } from "./events/Recordings.ts"
import { DataPlane } from "./proxy/DataPlane.ts"
import { Outbound } from "./outbound/Outbound.ts"
import { ProxyEvents } from "./proxy/ProxyEvents.ts"
import { ProxyTargets } from "./proxy/ProxyTargets.ts"
import { ConnectionChanges } from "./resources/ConnectionChanges.ts"
import { RequestEvents, requestEventRepoLayer } from "./events/RequestEvents.ts"
import { ConnectorDefinitions } from "./resources/ConnectorDefinitions.ts"
import { ActorDirectory } from "./resources/ActorDirectory.ts"
import { Actors } from "./resources/Actors.ts"
import { BrowserSessions } from "./auth/BrowserSessions.ts"
import { ConnectionAuthorization } from "./connections/ConnectionAuthorization.ts"
import { ConnectionDisconnect } from "./connections/ConnectionDisconnect.ts"
import { Connections } from "./connections/Connections.ts"
import { ConnectionSetup } from "./connections/ConnectionSetup.ts"
import { VerifyProbes } from "./connections/VerifyProbes.ts"
import { Connectors } from "./resources/Connectors.ts"
import { DefinitionValidator } from "./resources/DefinitionValidator.ts"
import { Keys } from "./resources/Keys.ts"
import { Encryption, resolutionTtl } from "./crypto/Encryption.ts"
import { Reencryption } from "./crypto/Reencryption.ts"
import { Listing } from "./resources/Listing.ts"
import { Metadata } from "./resources/Metadata.ts"
import { Namespaces } from "./resources/Namespaces.ts"
import { Notifications } from "./resources/Notifications.ts"
import { RateLimits } from "./resources/RateLimits.ts"
import { ResourceOps } from "./resources/ResourceOps.ts"
import { Search } from "./resources/Search.ts"
import { Authenticator } from "./auth/Authenticator.ts"
import { CounterStore } from "./stores/CounterStore.ts"
import * as Database from "./stores/Database.ts"
import { AppMetricsSql } from "./stores/Database.ts"
import { ensureDevSigningKey, ensureSelfSignedCertificate } from "./crypto/EmbeddedSecrets.ts"
import { Health } from "./stores/Health.ts"
import { NonceStore } from "./stores/NonceStore.ts"
import { TokenVerifier, type TokenVerifierConfig } from "./auth/TokenVerifier.ts"
import { printBanner, writeAdminToken } from "./StartupBanner.ts"

/** A file the configuration names could not be read. */
export class UnreadableFile extends Schema.TaggedError<UnreadableFile>()("UnreadableFile", {
  purpose: Schema.String,
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot read the ${this.purpose} at ${this.path}: ${this.reason}`
  }
}

const readFile = (purpose: string, file: string) =>
  Effect.tryPromise({
    try: () => fs.readFile(file),
    catch: (e) =>
      new UnreadableFile({ purpose, path: file, reason: e instanceof Error && "code" in e ? String(e.code) : "error" })
  })

const readKey = (signingKey: SigningKey): Effect.Effect<TokenVerifierConfig, UnreadableFile> => {
  if (signingKey.algorithm === "HS256") {
    return Effect.map(readFile("JWT shared secret", signingKey.secretPath), (secret) => ({
      algorithm: "HS256" as const,
      secret: new Uint8Array(secret)
    }))
  }
  const file = "generated" in signingKey ? signingKey.generated.publicKeyPath : signingKey.publicKeyPath
  return Effect.map(readFile("JWT public key", file), (pem) => ({
    algorithm: "RS256" as const,
    publicKeyPem: pem.toString("utf8")
  }))
}

const counterStoreLayer = (config: ResolvedConfig) =>
  config.counterStore.provider === "redis"
    ? CounterStore.layerRedis({ url: config.counterStore.url, keyPrefix: config.counterStore.keyPrefix })
    : CounterStore.layerMemory

/** Applies the main and app-metrics migrations; returns how many ran. */
export const migrate = Effect.gen(function* () {
  const main = yield* Migrations.migrateMain
  const metricsClient = yield* AppMetricsSql
  const metrics = yield* Migrations.migrateAppMetrics.pipe(Effect.provideService(SqlClient.SqlClient, metricsClient))
  return { main, metrics }
})

/** The schema is behind this build and `serve` was not asked to migrate. */
export class SchemaBehind extends Schema.TaggedError<SchemaBehind>()("SchemaBehind", { database: Schema.String }) {
  override get message() {
    return `the ${this.database} database schema is behind this build: run \`svc migrate\` (or \`svc serve --migrate\`)`
  }
}

const latestApplied = (sql: SqlClient.SqlClient, table: string) =>
  sql<{ readonly latest: number | null }>`SELECT max(migration_id) AS latest FROM ${sql(table)}`.pipe(
    Effect.map((rows) => rows[0]?.latest ?? 0),
    Effect.catch(() => Effect.succeed(0))
  )

const latestKnown = (loader: typeof Migrations.mainLoader) =>
  Effect.map(Effect.orDie(loader), (all) => Math.max(0, ...all.map(([id]) => id)))

const checkSchema = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const metrics = yield* AppMetricsSql
  yield* sql`SELECT 1`
  yield* metrics`SELECT 1`
  if ((yield* latestApplied(sql, Migrations.mainTable)) < (yield* latestKnown(Migrations.mainLoader))) {
    return yield* new SchemaBehind({ database: "main" })
  }
  if ((yield* latestApplied(metrics, Migrations.appMetricsTable)) < (yield* latestKnown(Migrations.appMetricsLoader))) {
    return yield* new SchemaBehind({ database: "appMetrics" })
  }
})

const startup = (config: ResolvedConfig, applyMigrations: boolean) =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      if (applyMigrations) {
        const applied = yield* migrate
        for (const [id, name] of [...applied.main, ...applied.metrics]) {
          yield* Effect.logInfo(`applied migration ${String(id).padStart(4, "0")}_${name}`)
        }
      } else {
        yield* checkSchema
      }
      const repo = yield* ActorRepo
      const actors = yield* repo.syncConfigured(
        config.auth.actors.map((a) => ({
          externalId: a.external_id,
          namespace: a.namespace ?? "root",
          permissions: a.permissions,
          ...(a.name === undefined ? {} : { name: a.name }),
          ...(a.labels === undefined ? {} : { labels: a.labels }),
          ...(a.annotations === undefined ? {} : { annotations: a.annotations })
        }))
      )
      yield* Effect.logInfo(`synced ${actors.length} configured actor(s)`)
      // A newly configured actor has no system labels yet (spec 2.3): materialise them now.
      if (actors.some((actor) => actor.labels["svc/act/-/id"] !== actor.id)) {
        const reconciler = yield* LabelReconciler
        yield* reconciler.all
      }
    })
  )

/** Connection secrets, definitions and the outbound client (handlers and the probe monitor share them). */
const connectionSupport = Layer.mergeAll(ConnectionSecrets.layer, Credentials.layer, OAuthClient.layer).pipe(
  Layer.provideMerge(Layer.mergeAll(ConnectorDefinitions.layer, Outbound.layer))
)

/**
 * The embedded database runs in this process: each write blocks the event loop for its whole
 * duration, so request events are written in fewer, larger batches there.
 */
const embeddedSinkOptions = { flushInterval: Duration.seconds(1), batchSize: 2000 } as const

/** The proxy data plane: cached targets, the per-connection gate, events and recordings. */
const dataPlane = DataPlane.layer.pipe(Layer.provide(Layer.mergeAll(ProxyTargets.layer, ProxyEvents.layer())))

/** Interactive setup: `_initiate`, setup steps, the OAuth2 browser leg, disconnect, browser sessions. */
const setupServices = ConnectionAuthorization.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(ConnectionSetup.layer, ConnectionDisconnect.layer, BrowserSessions.layer)),
  Layer.provide(Layer.mergeAll(VerifyProbes.layer, AuthorizationFlows.layer))
)

/** The resource-model services behind the api and admin-api handlers. */
const resourceServices = Layer.mergeAll(
  Namespaces.layer,
  Actors.layer,
  Connectors.layer,
  Connections.layer,
  Keys.layer,
  RateLimits.layer,
  Search.layer,
  Probes.layer,
  RequestEvents.layer,
  dataPlane
).pipe(
  (services) => Metadata.layer.pipe(Layer.provideMerge(services)),
  (services) => setupServices.pipe(Layer.provideMerge(services)),
  Layer.provideMerge(TokenRefresher.layerNoDeps),
  Layer.provideMerge(Notifications.layer),
  Layer.provideMerge(Layer.mergeAll(ResourceOps.layer, Listing.layer, connectionSupport, DefinitionValidator.layer)),
  Layer.provideMerge(ConnectionChanges.layer)
)

const healthLayer = (config: ResolvedConfig) =>
  Health.layer(
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const metrics = yield* AppMetricsSql
      const counters = yield* CounterStore
      return [
        { name: "database", check: sql`SELECT 1` },
        ...(config.appMetricsDatabase === "main" ? [] : [{ name: "appMetricsDatabase", check: metrics`SELECT 1` }]),
        { name: "counterStore", check: counters.ping() }
      ]
    })
  )

/** Runs the selected services until interrupted (SIGINT/SIGTERM), then shuts down gracefully. */
export const serve = Effect.fn("Serve.serve")(function* (
  config: ResolvedConfig,
  services: ReadonlyArray<ServiceId>,
  options: { readonly migrate: boolean }
) {
  const signingKey = config.auth.signingKey
  if ("generated" in signingKey && (yield* ensureDevSigningKey(signingKey.generated))) {
    yield* Effect.logWarning(
      `generated a development JWT signing key in ${path.dirname(signingKey.generated.privateKeyPath)}`
    )
  }
  if (services.includes("admin-api") && config.adminTls.selfSigned) {
    if (yield* ensureSelfSignedCertificate(config.adminTls)) {
      yield* Effect.logInfo(`generated a self-signed development certificate at ${config.adminTls.certPath}`)
    }
  }
  const verifierConfig = yield* readKey(signingKey)
  const adminTls = services.includes("admin-api")
    ? {
        cert: yield* readFile("admin-api TLS certificate", config.adminTls.certPath),
        key: yield* readFile("admin-api TLS key", config.adminTls.keyPath)
      }
    : undefined
  const stores = Layer.mergeAll(Database.layer(config.database, config.appMetricsDatabase), counterStoreLayer(config))
  const repos = Layer.mergeAll(
    ActorRepo.layer,
    ResourceRepo.layer,
    ConnectorRepo.layer,
    SearchRepo.layer,
    LabelReconciler.layer,
    ConnectionRepo.layer,
    ProbeStateRepo.layer,
    DataKeyRepo.layer,
    NotificationRepo.layer,
    requestEventRepoLayer
  )
  // One directory: the authenticator reads it, actor writes invalidate it.
  const directory = ActorDirectory.layer
  const auth = Authenticator.layer.pipe(
    Layer.provide([TokenVerifier.layer(verifierConfig).pipe(Layer.provide(NonceStore.layerNoDeps)), directory])
  )
  const applyMigrations = options.migrate || config.database.provider === "pglite"
  // One instance of the services (and their caches) for the handlers and the worker.
  // One Encryption (one cache, invalidated by key writes) for the handlers and the worker.
  const encryption = Encryption.layer(config.encryption.rootKey)
  // One sink (one buffer, flushed when the servers have stopped) and, with full recording, one
  // recorder for every handler.
  const requestEvents = Layer.mergeAll(
    RequestEventSink.layer(config.database.provider === "pglite" ? embeddedSinkOptions : {}),
    config.appMetrics.fullRequestRecording === "always"
      ? Recordings.layer().pipe(Layer.provide(encryption))
      : Layer.empty
  )
  const handlerServices = resourceServices.pipe(Layer.provide([directory, encryption, requestEvents]))
  const cluster = services.includes("worker")
    ? Layer.mergeAll(
        LabelPropagationLive.layer({
          pollInterval: Duration.millis(config.labels.propagationPollIntervalMs),
          consistencyCheckInterval: Duration.millis(config.labels.consistencyCheckIntervalMs)
        }),
        ReencryptionLive.layer({
          pollInterval: Duration.millis(config.encryption.reencryptPollIntervalMs),
          settleDelay: Duration.sum(resolutionTtl, Duration.seconds(1))
        }).pipe(Layer.provide(Reencryption.sweeperLayer), Layer.provide(encryption)),
        ProbeMonitorLive.layer({ pollInterval: Duration.millis(config.probes.pollIntervalMs) }).pipe(
          Layer.provide(ProbeScheduler.layer),
          Layer.provide(handlerServices)
        ),
        TokenRefreshSweepLive.layer({ pollInterval: Duration.millis(config.oauth2.refreshSweepIntervalMs) }).pipe(
          Layer.provide(RefreshSweep.tickLayer),
          Layer.provide(handlerServices)
        )
      ).pipe(Layer.provideMerge(ClusterRuntime.layerSingle()))
    : Layer.empty
  const app = Layer.mergeAll(
    Servers.layer(config, services, adminTls).pipe(
      Layer.provide([auth, healthLayer(config), handlerServices, directory])
    ),
    cluster
  ).pipe(
    Layer.provide(startup(config, applyMigrations)),
    Layer.provide(repos),
    Layer.provide(stores),
    Layer.provide(Layer.succeed(SvcConfig, config))
  )
  yield* Layer.build(app)
  const tokenFile =
    "generated" in signingKey ? yield* writeAdminToken(config, signingKey.generated.privateKeyPath) : undefined
  yield* printBanner(config, services, tokenFile)
  return yield* Effect.never
}, Effect.scoped)

/** `svc migrate`: applies pending migrations to the main and app-metrics databases and exits. */
export const runMigrations = Effect.fn("Serve.runMigrations")(function* (config: ResolvedConfig) {
  const applied = yield* migrate.pipe(Effect.provide(Database.layer(config.database, config.appMetricsDatabase)))
  for (const [id, name] of applied.main) yield* Console.log(`main: applied ${String(id).padStart(4, "0")}_${name}`)
  for (const [id, name] of applied.metrics)
    yield* Console.log(`appMetrics: applied ${String(id).padStart(4, "0")}_${name}`)
  if (applied.main.length + applied.metrics.length === 0) yield* Console.log("migrations: already up to date")
}, Effect.scoped)
