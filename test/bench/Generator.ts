/**
 * Which load generator the load rows use, said in the output: `wrk` (Debian package `wrk`) pinned
 * to the generator CPU when it is installed, else the in-process undici generator (`Load.ts`) with
 * the bench process pinned there for the row. `--generator undici` forces the fallback.
 */
import { onGeneratorCpu, pinningNote } from "./Cpu.ts"
import { type LoadOptions, type LoadResult, runLoad } from "./Load.ts"
import { runWrk, wrkSeconds, wrkVersion } from "./Wrk.ts"

export interface Generator {
  readonly tool: "wrk" | "undici"
  /** One line for the report: the tool, its version or why it was not used, and the pinning. */
  readonly description: string
  readonly run: (options: LoadOptions) => Promise<LoadResult>
  /** Seconds actually measured and warmed up for the requested ones (wrk takes whole seconds). */
  readonly seconds: (requested: number) => number
}

export const selectGenerator = (wanted: "auto" | "wrk" | "undici"): Generator => {
  const version = wanted === "undici" ? undefined : wrkVersion()
  if (wanted === "wrk" && version === undefined) throw new Error("--generator wrk: wrk is not on PATH")
  const pinning = pinningNote()
  if (version !== undefined) {
    return {
      tool: "wrk",
      description: `wrk ${version}, 1 thread, closed loop (whole seconds); ${pinning}`,
      run: runWrk,
      seconds: (requested) => wrkSeconds(requested * 1000)
    }
  }
  const why = wanted === "undici" ? "forced with --generator undici" : "wrk not installed (Debian package wrk)"
  return {
    tool: "undici",
    description: `in-process undici Pool (Load.ts), closed loop (${why}); ${pinning}`,
    run: (options) => onGeneratorCpu(() => runLoad(options)),
    seconds: (requested) => requested
  }
}
