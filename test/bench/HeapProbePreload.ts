/**
 * Preloaded into each process under test by the bench and `profile.ts` (`NODE_OPTIONS=--import`,
 * set up by `HeapProbe.ts`; never part of svc itself): V8's GC profiler on the main thread,
 * restarted every {@link flushMs}, and each collection appended to `$BENCH_HEAP_DIR/<pid>.log`
 * with a sample of the heap's used size, so the bench can tell the bytes the process allocated
 * over a window and its GC pauses. Lines: `heap <epoch ms> <used bytes>` and
 * `gc <epoch ms at its end> <type> <pause µs> <used before> <used after>`.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { GCProfiler, getHeapStatistics } from "node:v8"
import { isMainThread } from "node:worker_threads"

/** How often the profile is read and written out. */
const flushMs = 250

const dir = process.env.BENCH_HEAP_DIR
if (dir !== undefined && dir !== "" && isMainThread) {
  const file = path.join(dir, `${process.pid}.log`)
  let profiler = new GCProfiler()
  profiler.start()
  const flush = () => {
    const result = profiler.stop()
    profiler = new GCProfiler()
    profiler.start()
    const lines: Array<string> = []
    for (const gc of result?.statistics ?? []) {
      // `cost` is the collection's duration (µs); V8 reports no end time per record, so each is
      // dated by the profile's end (a flush interval at most later).
      lines.push(
        `gc ${result?.endTime ?? Date.now()} ${gc.gcType} ${gc.cost} ${gc.beforeGC.heapStatistics.usedHeapSize} ${gc.afterGC.heapStatistics.usedHeapSize}`
      )
    }
    lines.push(`heap ${Date.now()} ${getHeapStatistics().used_heap_size}`)
    fs.appendFile(file, `${lines.join("\n")}\n`, () => undefined)
  }
  setInterval(flush, flushMs).unref()
}
