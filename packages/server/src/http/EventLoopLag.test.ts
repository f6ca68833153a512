import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { EventLoopLag, maxLagMs, sampleIntervalMs } from "./EventLoopLag.ts"

describe("EventLoopLag", () => {
  it.live("reads a quiet loop as on time and a blocked one as late", () =>
    Effect.gen(function* () {
      const lag = yield* EventLoopLag
      assert.isBelow(lag.currentMs(), maxLagMs)
      // Block the loop past the next tick: it is overdue by the excess, before it even runs.
      const until = performance.now() + sampleIntervalMs + 600
      while (performance.now() < until) {
        // busy: the timer cannot fire
      }
      assert.isAtLeast(lag.currentMs(), 500)
    }).pipe(Effect.provide(EventLoopLag.layer))
  )
})
