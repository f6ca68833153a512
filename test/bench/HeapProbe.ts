/**
 * Allocation and GC pauses of a process under test, beside its CPU time per request (issue 31):
 * {@link installHeapProbe} makes every Node process the bench starts afterwards preload
 * `HeapProbePreload.ts` (through `NODE_OPTIONS`, so svc itself carries no diagnostic code), and
 * {@link heapWindow} reads what that process logged over a window. Allocated bytes are the
 * growth of the used heap plus what each collection freed (garbage included, which is the
 * point); pauses are the durations V8's GC profiler reports per collection. Main thread only:
 * the embedded default's PGlite thread has a heap of its own, not counted.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { trackDir } from "./Children.ts"

const probe = fileURLToPath(new URL("./HeapProbePreload.ts", import.meta.url))

let dir: string | undefined
let nodeOptions: string | undefined

/**
 * Turns the probe on for every Node process started from now on (the bench's children inherit its
 * env) until {@link removeHeapProbe}; the logs of processes started meanwhile stay readable.
 */
export const installHeapProbe = (): void => {
  if (dir === undefined) {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "svc-bench-heap-"))
    trackDir(dir)
  }
  if (process.env.BENCH_HEAP_DIR === dir) return
  nodeOptions = process.env.NODE_OPTIONS
  process.env.BENCH_HEAP_DIR = dir
  process.env.NODE_OPTIONS = `${nodeOptions ?? ""} --import=${probe}`.trim()
}

/** Processes started from now on run without the probe (start-up and footprint rows measure bare processes). */
export const removeHeapProbe = (): void => {
  if (process.env.BENCH_HEAP_DIR === undefined) return
  delete process.env.BENCH_HEAP_DIR
  if (nodeOptions === undefined) delete process.env.NODE_OPTIONS
  else process.env.NODE_OPTIONS = nodeOptions
}

/** What a process allocated and paused for over a window. */
export interface HeapWindow {
  readonly allocatedBytes: number
  /** Each collection's pause, µs. */
  readonly pausesUs: ReadonlyArray<number>
}

/** The probe flushes every 250 ms: a window's end is read after this much more. */
export const probeSettleMs = 300

/** The log's lines so far (empty when the process has none). */
const lines = (pid: number): Array<string> => {
  if (dir === undefined) return []
  try {
    return fs.readFileSync(path.join(dir, `${pid}.log`), "utf8").split("\n")
  } catch {
    return []
  }
}

/** A mark at the log's current end: {@link heapWindow} counts from there. */
export const heapMark = (pid: number | undefined): number | undefined =>
  pid === undefined || dir === undefined ? undefined : lines(pid).length

/**
 * What `pid` allocated and paused for between the first heap sample after `mark` and the last one
 * logged now; undefined without the probe or without two samples.
 */
export const heapWindow = (pid: number | undefined, mark: number | undefined): HeapWindow | undefined => {
  if (pid === undefined || mark === undefined) return undefined
  const log = lines(pid).slice(Math.max(0, mark - 1))
  let first: number | undefined
  let last: number | undefined
  let freed = 0
  let pending = 0
  const pauses: Array<number> = []
  let pendingPauses: Array<number> = []
  for (const line of log) {
    const fields = line.split(" ")
    if (fields[0] === "gc" && first !== undefined) {
      pending += Number(fields[4]) - Number(fields[5])
      pendingPauses.push(Number(fields[3]))
    } else if (fields[0] === "heap") {
      const used = Number(fields[2])
      if (first === undefined) first = used
      else {
        freed += pending
        pauses.push(...pendingPauses)
        last = used
      }
      pending = 0
      pendingPauses = []
    }
  }
  if (first === undefined || last === undefined) return undefined
  return { allocatedBytes: last - first + freed, pausesUs: pauses }
}

/** The `p`-th percentile (nearest rank) of `values`; 0 when empty. */
export const percentileOf = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number
}
