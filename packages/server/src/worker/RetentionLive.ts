/**
 * Retention of application metrics (issue 19 item 5) on the worker: one cluster singleton deletes
 * request events older than `appMetrics.requestEvents.retention` (a recorded event's blobs first,
 * so no recording outlives its event) and resource snapshots older than
 * `appMetrics.resourceSnapshots.retention`, a batch per statement with a pause between batches,
 * at start and then every interval. A failed pass is logged and the next one picks up where it
 * stopped: an event whose blobs could not be removed keeps its row until they are.
 */
import { RetentionSingleton } from "@svc/domain/DurableNames"
import { RetentionRepo, retentionBatchSize } from "@svc/sql/RetentionRepo"
import { Clock, Duration, Effect, Layer } from "effect"
import { type Sharding, Singleton } from "effect/cluster"
import { SqlClient } from "effect/sql"
import type { ResolvedConfig } from "../config/SvcConfig.ts"
import { Recordings } from "../events/Recordings.ts"
import { AppMetricsSql } from "../stores/Database.ts"

export interface RetentionOptions {
  /** How long request events and their recordings are kept. */
  readonly requestEvents: Duration.Input
  /** How long resource snapshots are kept. */
  readonly resourceSnapshots: Duration.Input
  /** Between passes; default 1 hour. */
  readonly interval?: Duration.Input | undefined
  /** Rows per delete statement; default {@link retentionBatchSize}. */
  readonly batchSize?: number | undefined
  /** Between two batches, so ingest and queries get the database; default 100 ms. */
  readonly pause?: Duration.Input | undefined
}

/** What one pass deleted. */
export interface RetentionPass {
  readonly events: number
  readonly recordings: number
  readonly snapshots: number
  /** Delete statements run. */
  readonly batches: number
}

/**
 * Rows per statement on the embedded PGlite, whose statements run on the event loop of the
 * process that proxies: measured on 500,000 events, a 5,000-row delete takes 25–125 ms there, a
 * 1,000-row one 4–8 ms.
 */
export const embeddedBatchSize = 1000

/** The batch size for the configured app-metrics database. */
export const batchSizeFor = (config: ResolvedConfig): number => {
  const database = config.appMetricsDatabase === "main" ? config.database : config.appMetricsDatabase
  return database.provider === "pglite" ? embeddedBatchSize : retentionBatchSize
}

/** Blob removals in flight at once. */
const removalConcurrency = 16

/** One pass: everything expired as of now, in batches. */
export const runPass = (options: RetentionOptions) =>
  Effect.gen(function* () {
    const repo = yield* RetentionRepo
    const recordings = yield* Recordings
    const batchSize = options.batchSize ?? retentionBatchSize
    const pause = Duration.fromInputUnsafe(options.pause ?? Duration.millis(100))
    const breathe = Duration.isZero(pause) ? Effect.void : Effect.sleep(pause)
    const now = yield* Clock.currentTimeMillis
    const eventCutoff = new Date(now - Duration.toMillis(Duration.fromInputUnsafe(options.requestEvents)))
    const snapshotCutoff = new Date(now - Duration.toMillis(Duration.fromInputUnsafe(options.resourceSnapshots)))
    let events = 0
    let removed = 0
    let snapshots = 0
    let batches = 0
    while (true) {
      const expired = yield* repo.expiredEvents(eventCutoff, batchSize)
      if (expired.length === 0) break
      const recorded = expired.filter((event) => event.recorded)
      yield* Effect.forEach(recorded, (event) => recordings.remove(event.id), {
        concurrency: removalConcurrency,
        discard: true
      })
      removed += recorded.length
      const deleted = yield* repo.deleteEvents(expired.map((event) => event.id))
      events += deleted
      batches++
      if (expired.length < batchSize || deleted === 0) break
      yield* breathe
    }
    // The per-minute rollups expire with the events (whole minutes before the events' cutoff).
    while (true) {
      const deleted = yield* repo.deleteRollups(eventCutoff, batchSize)
      if (deleted < batchSize) break
      yield* breathe
    }
    while (true) {
      const deleted = yield* repo.deleteSnapshots(snapshotCutoff, batchSize)
      snapshots += deleted
      batches++
      if (deleted < batchSize) break
      yield* breathe
    }
    return { events, recordings: removed, snapshots, batches } satisfies RetentionPass
  }).pipe(Effect.withSpan("Retention.pass"))

/** The singleton over a provided `RetentionRepo` and `Recordings`. */
export const layerNoDeps = (
  options: RetentionOptions
): Layer.Layer<never, never, RetentionRepo | Recordings | Sharding.Sharding> =>
  Singleton.make(
    RetentionSingleton,
    Effect.forever(
      runPass(options).pipe(
        Effect.tap((pass) =>
          pass.events + pass.snapshots > 0
            ? Effect.logInfo(
                `retention: deleted ${pass.events} request events (${pass.recordings} recordings) and ${pass.snapshots} resource snapshot rows`
              )
            : Effect.void
        ),
        Effect.catchCause((cause) => Effect.logWarning("retention pass failed; the next one resumes", cause)),
        Effect.andThen(Effect.sleep(options.interval ?? Duration.hours(1)))
      )
    )
  )

/** The singleton over the app-metrics database (`AppMetricsSql`) and the recordings store. */
export const layer = (
  options: RetentionOptions
): Layer.Layer<never, never, AppMetricsSql | Recordings | Sharding.Sharding> =>
  layerNoDeps(options).pipe(
    Layer.provide(RetentionRepo.layer.pipe(Layer.provide(Layer.effect(SqlClient.SqlClient, AppMetricsSql))))
  )
