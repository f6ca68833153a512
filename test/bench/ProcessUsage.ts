/**
 * CPU time and resident memory of a process under test, read from Linux's `/proc` (the bench
 * runs its servers as child processes): what one proxied request costs the svc process, beside
 * the req/s it reaches. Undefined where `/proc` is not there.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { heapMark, heapWindow, percentileOf, probeSettleMs } from "./HeapProbe.ts"

const clockTicks = (() => {
  try {
    const ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim())
    return Number.isFinite(ticks) && ticks > 0 ? ticks : 100
  } catch {
    return 100
  }
})()

/** User + system CPU time of `pid` so far, in ms; undefined when it cannot be read. */
export const cpuMs = (pid: number): number | undefined => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const utime = Number(fields[11])
    const stime = Number(fields[12])
    return Number.isFinite(utime) && Number.isFinite(stime) ? ((utime + stime) * 1000) / clockTicks : undefined
  } catch {
    return undefined
  }
}

/** Resident set size of `pid` in MB; undefined when it cannot be read. */
export const rssMb = (pid: number): number | undefined => {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))
    return match === null ? undefined : Number(match[1]) / 1024
  } catch {
    return undefined
  }
}

/** What the process under test spent on one row. */
export interface ProcessUsage {
  /** CPU time per request: the CPU of the whole row (warm-up included) over the requests it served, estimated from the measured rate. */
  readonly cpuMsPerRequest: number
  /** Resident memory at the end of the row. */
  readonly rssMb: number
  /** Main-thread heap bytes allocated per request over the row, garbage included (`HeapProbe.ts`; with the probe only). */
  readonly allocatedKbPerRequest?: number
  /** 99th percentile of the row's GC pauses, ms (with the probe only). */
  readonly gcPauseP99Ms?: number
}

/** Runs `row` and answers the process's usage over it, when `/proc` can be read. */
export const measureUsage = async <A extends { readonly rps: number }>(
  pid: number | undefined,
  totalMs: number,
  row: () => Promise<A>
): Promise<{ readonly result: A; readonly usage: ProcessUsage | undefined }> => {
  const before = pid === undefined ? undefined : cpuMs(pid)
  const mark = heapMark(pid)
  const result = await row()
  if (pid === undefined || before === undefined) return { result, usage: undefined }
  const after = cpuMs(pid)
  const rss = rssMb(pid)
  const served = result.rps * (totalMs / 1000)
  if (after === undefined || rss === undefined || served <= 0) return { result, usage: undefined }
  if (mark !== undefined) await new Promise((resolve) => setTimeout(resolve, probeSettleMs))
  const heap = heapWindow(pid, mark)
  return {
    result,
    usage: {
      cpuMsPerRequest: (after - before) / served,
      rssMb: rss,
      ...(heap === undefined
        ? {}
        : {
            allocatedKbPerRequest: heap.allocatedBytes / 1024 / served,
            gcPauseP99Ms: percentileOf(heap.pausesUs, 99) / 1000
          })
    }
  }
}
