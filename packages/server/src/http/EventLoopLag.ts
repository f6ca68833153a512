/**
 * Event-loop lag for `GET /livez`: a timer due every second records how late it fired. A probe
 * answered at all shows the loop turns; the lag shows whether it keeps up. A loop blocked for
 * good answers no probe (the kubelet's timeout fails it); one that turns but each turn takes
 * seconds (a runaway synchronous loop, a CPU-bound handler) answers 503 here.
 */
import { Context, Effect, Layer } from "effect"

/** How often the timer is due. */
export const sampleIntervalMs = 1_000
/** A lag over this fails the liveness probe. */
export const maxLagMs = 5_000

/**
 * The lag to report at `now`, from the last sample: the larger of how late the last tick fired
 * and how overdue the next one is (a loop that stopped running timers shows it here).
 */
export const lagAt = (now: number, lastTick: number, lastLag: number, intervalMs = sampleIntervalMs): number =>
  Math.max(lastLag, now - lastTick - intervalMs, 0)

/** The event loop's current lag in milliseconds, sampled while the layer is alive. */
export class EventLoopLag extends Context.Service<EventLoopLag, { readonly currentMs: () => number }>()(
  "@svc/server/http/EventLoopLag"
) {
  /**
   * A sampler on a real-time timer (`performance.now`, not `Clock`: it measures the process, not
   * the program's time), unref'd so it never keeps the process alive, stopped with the layer.
   */
  static readonly layer: Layer.Layer<EventLoopLag> = Layer.effect(
    EventLoopLag,
    Effect.gen(function* () {
      let lastTick = performance.now()
      let lastLag = 0
      yield* Effect.acquireRelease(
        Effect.sync(() =>
          setInterval(() => {
            const now = performance.now()
            lastLag = Math.max(0, now - lastTick - sampleIntervalMs)
            lastTick = now
          }, sampleIntervalMs).unref()
        ),
        (t) => Effect.sync(() => clearInterval(t))
      )
      return EventLoopLag.of({ currentMs: () => lagAt(performance.now(), lastTick, lastLag) })
    })
  )
}
