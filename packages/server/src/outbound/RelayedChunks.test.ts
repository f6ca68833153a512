import { assert, describe, it } from "@effect/vitest"
import { setImmediate } from "node:timers/promises"
import { budgetBytes, chunkRelayed } from "./RelayedChunks.ts"

describe("chunkRelayed", () => {
  it("keeps the dead chunks of a 128 MB relay near the budget", async () => {
    // As a relay does: a fresh 64 KB Buffer per chunk, dropped once written, an event-loop turn
    // between chunks. Without the requested minor collections, V8 lets ~64 MB of them pile up.
    const chunkBytes = 64 * 1024
    const start = process.memoryUsage().arrayBuffers
    let peak = 0
    let sink = 0
    for (let relayed = 0; relayed < 128 * 1024 * 1024; relayed += chunkBytes) {
      const chunk = Buffer.allocUnsafe(chunkBytes)
      sink ^= chunk[0] ?? 0
      chunkRelayed(chunk.byteLength)
      await setImmediate()
      peak = Math.max(peak, process.memoryUsage().arrayBuffers - start)
    }
    assert.isAtMost(sink, 255)
    assert.isBelow(peak, 3 * budgetBytes)
  })
})
