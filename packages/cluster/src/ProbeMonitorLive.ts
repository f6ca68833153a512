/**
 * Background probes on the worker (spec 4.2): one cluster singleton ticks the probe scheduler,
 * which runs due periodic probes and moves `healthState` across failure and recovery thresholds.
 * The scheduler itself lives with the server's outbound client; it is provided as `ProbeTick`.
 */
import { ProbeMonitorSingleton } from "@svc/domain/DurableNames"
import { Context, type Duration, Effect, type Layer } from "effect"
import { type Sharding, Singleton } from "effect/cluster"

/** One scheduler pass: run what is due, record outcomes. */
export class ProbeTick extends Context.Service<ProbeTick, { readonly tick: Effect.Effect<void> }>()(
  "@svc/cluster/ProbeTick"
) {}

/** The singleton loop; a failed pass is logged and the next tick runs as usual. */
export const layer = (options: {
  readonly pollInterval: Duration.Input
}): Layer.Layer<never, never, ProbeTick | Sharding.Sharding> =>
  Singleton.make(
    ProbeMonitorSingleton,
    Effect.gen(function* () {
      const probes = yield* ProbeTick
      return yield* Effect.forever(
        probes.tick.pipe(
          Effect.catchCause((cause) => Effect.logWarning("probe monitor pass failed; retrying", cause)),
          Effect.andThen(Effect.sleep(options.pollInterval))
        )
      )
    })
  )
