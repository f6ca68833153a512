/**
 * The worker service (ARCHITECTURE "Durable work"): the durable work its cluster runner
 * hosts — label propagation and its consistency checker, re-encryption after key rotation, the
 * probe monitor, the token refresh sweep, the Connection entity, the connector lifecycle
 * workflows, the version migration workflow with its hook sandbox, the resource snapshots of the
 * metrics and their retention, the task-queue size metric when telemetry is on.
 */
import { parseDuration } from "@svc/domain/Duration"
import { ResourceSampler } from "@svc/sql/ResourceSnapshotRepo"
import { Duration, Layer } from "effect"
import type { ResolvedConfig } from "../config/SvcConfig.ts"
import { ProbeScheduler } from "../connections/ProbeScheduler.ts"
import { resolutionTtl } from "../crypto/Encryption.ts"
import { Reencryption } from "../crypto/Reencryption.ts"
import * as ConnectionEntityLive from "./ConnectionEntityLive.ts"
import * as LabelPropagationLive from "./LabelPropagationLive.ts"
import { VersionMigration } from "../connections/VersionMigration.ts"
import { HookSandbox } from "../hooks/HookSandbox.ts"
import * as LifecycleLive from "./LifecycleLive.ts"
import * as MigrationLive from "./MigrationLive.ts"
import * as ProbeMonitorLive from "./ProbeMonitorLive.ts"
import * as ReencryptionLive from "./ReencryptionLive.ts"
import * as ResourceSnapshotsLive from "./ResourceSnapshotsLive.ts"
import * as RetentionLive from "./RetentionLive.ts"
import * as TaskTelemetry from "./TaskTelemetry.ts"
import * as SetupCleanupLive from "./SetupCleanupLive.ts"
import * as TokenRefreshSweepLive from "./TokenRefreshSweepLive.ts"
import * as WebhookDeliveryLive from "./WebhookDeliveryLive.ts"
import { WebhookDelivery } from "../events/WebhookDelivery.ts"

/** Every entity, singleton and workflow a worker runs; needs its runner (`Membership`), the stores and the services. */
export const layerNoDeps = (config: ResolvedConfig) =>
  Layer.mergeAll(
    LabelPropagationLive.layerNoDeps({
      pollInterval: Duration.millis(config.labels.propagationPollIntervalMs),
      consistencyCheckInterval: Duration.millis(config.labels.consistencyCheckIntervalMs)
    }),
    ReencryptionLive.layerNoDeps({
      pollInterval: Duration.millis(config.encryption.reencryptPollIntervalMs),
      settleDelay: Duration.sum(resolutionTtl, Duration.seconds(1))
    }).pipe(Layer.provide(Reencryption.layerNoDeps)),
    ProbeMonitorLive.layerNoDeps({ pollInterval: Duration.millis(config.probes.pollIntervalMs) }).pipe(
      Layer.provide(ProbeScheduler.layerNoDeps)
    ),
    TokenRefreshSweepLive.layerNoDeps({ pollInterval: Duration.millis(config.oauth2.refreshSweepIntervalMs) }),
    SetupCleanupLive.layerNoDeps({ setupTtlMs: config.connections.setupTtlMs }),
    WebhookDeliveryLive.layerNoDeps.pipe(Layer.provide(WebhookDelivery.layerNoDeps)),
    ConnectionEntityLive.layerNoDeps(),
    LifecycleLive.layerNoDeps,
    // svc.queue.queue.size (spec 8.3): every 15 s, or the metric export interval when shorter; telemetry off: nothing.
    TaskTelemetry.queueSizeLayer(
      Duration.millis(Math.max(1_000, Math.min(15_000, config.telemetry.metricExportIntervalMs)))
    ),
    MigrationLive.layerNoDeps.pipe(
      Layer.provide(VersionMigration.layerNoDeps),
      Layer.provide(
        HookSandbox.layer({
          maxTimeout: Duration.millis(config.migrations.hookTimeoutMs),
          memoryBytes: config.migrations.hookMemoryBytes,
          stackBytes: config.migrations.hookStackBytes,
          poolSize: config.migrations.hookWorkers
        })
      )
    ),
    ResourceSnapshotsLive.layerNoDeps({
      interval: Duration.millis(parseDuration(config.appMetrics.resourceSnapshotInterval) ?? 15 * 60_000)
    }).pipe(Layer.provide(ResourceSampler.layer)),
    RetentionLive.layer({
      requestEvents: Duration.millis(config.appMetrics.requestEventsRetentionMs),
      resourceSnapshots: Duration.millis(config.appMetrics.resourceSnapshotsRetentionMs),
      batchSize: RetentionLive.batchSizeFor(config)
    })
  )
