/**
 * Background probes on the worker (spec 4.2): one cluster singleton ticks the probe scheduler,
 * which runs due periodic probes and moves `healthState` across failure and recovery thresholds.
 */
import { ProbeMonitorSingleton } from "@svc/domain/DurableNames"
import { type Duration, Effect, type Layer } from "effect"
import { type Sharding, Singleton } from "effect/cluster"
import { ProbeScheduler } from "../connections/ProbeScheduler.ts"

/** The singleton loop; a failed pass is logged and the next tick runs as usual. */
export const layerNoDeps = (options: {
  readonly pollInterval: Duration.Input
}): Layer.Layer<never, never, ProbeScheduler | Sharding.Sharding> =>
  Singleton.make(
    ProbeMonitorSingleton,
    Effect.gen(function* () {
      const scheduler = yield* ProbeScheduler
      return yield* Effect.forever(
        scheduler.tick.pipe(
          Effect.catchCause((cause) => Effect.logWarning("probe monitor pass failed; retrying", cause)),
          Effect.andThen(Effect.sleep(options.pollInterval))
        )
      )
    })
  )
