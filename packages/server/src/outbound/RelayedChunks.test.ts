import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { promisify } from "node:util"
import { relayGcFlag } from "./RelayedChunks.ts"

/**
 * As a relay does, in a fresh Node process given `flags`: a fresh 64 KB Buffer per chunk, dropped
 * once written, an event-loop turn between chunks, 128 MB in all; prints the peak of
 * `arrayBuffers` above the start and the budget.
 */
const relay = async (flags: ReadonlyArray<string>) => {
  const script = `
    const { setImmediate } = await import("node:timers/promises")
    const { budgetBytes, chunkRelayed } = await import(${JSON.stringify(new URL("./RelayedChunks.ts", import.meta.url).href)})
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
    console.log(JSON.stringify({ peak, budgetBytes, sink, gc: typeof globalThis.gc }))
  `
  const { stdout } = await promisify(execFile)(process.execPath, [...flags, "--input-type=module", "-e", script])
  return JSON.parse(stdout) as { peak: number; budgetBytes: number; sink: number; gc: string }
}

describe("chunkRelayed", () => {
  it("keeps the dead chunks of a 128 MB relay near the budget in a process started with the launcher's flag", async () => {
    const run = await relay([relayGcFlag])
    assert.isAtMost(run.sink, 255)
    assert.isBelow(run.peak, 3 * run.budgetBytes)
    // exposed under its private name only
    assert.strictEqual(run.gc, "undefined")
  })

  it("relays without the flag, leaving the chunks to V8's own schedule", async () => {
    const run = await relay([])
    assert.isAtMost(run.sink, 255)
    // without the collections the dead chunks pile up well past the budget
    assert.isAbove(run.peak, 3 * run.budgetBytes)
  })
})
