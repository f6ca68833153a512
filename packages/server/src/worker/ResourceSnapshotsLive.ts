/**
 * Resource snapshots on the worker (spec 4.7): one cluster singleton samples every live resource
 * at start and then every `appMetrics.resourceSnapshotInterval` into the app-metrics database,
 * where the `resources.*` metrics read them. A failed pass is logged and the next one runs.
 */
import { ResourceSnapshotsSingleton } from "@svc/domain/DurableNames"
import { ResourceSampler, ResourceSnapshotRepo } from "@svc/sql/ResourceSnapshotRepo"
import { Clock, type Duration, Effect, type Layer } from "effect"
import { type Sharding, Singleton } from "effect/cluster"

/** One snapshot now; how many resources it holds. */
export const takeSnapshot = Effect.gen(function* () {
  const sampler = yield* ResourceSampler
  const repo = yield* ResourceSnapshotRepo
  const takenAt = new Date(yield* Clock.currentTimeMillis)
  const samples = yield* sampler.sample
  yield* repo.insert(takenAt, samples)
  return samples.length
}).pipe(Effect.withSpan("ResourceSnapshots.take"))

export const layerNoDeps = (options: {
  readonly interval: Duration.Input
}): Layer.Layer<never, never, ResourceSampler | ResourceSnapshotRepo | Sharding.Sharding> =>
  Singleton.make(
    ResourceSnapshotsSingleton,
    Effect.forever(
      takeSnapshot.pipe(
        Effect.tap((count) => Effect.logDebug(`resource snapshot: ${count} resources`)),
        Effect.catchCause((cause) => Effect.logWarning("resource snapshot failed; the next one runs as usual", cause)),
        Effect.andThen(Effect.sleep(options.interval))
      )
    )
  )
