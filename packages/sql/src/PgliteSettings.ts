/**
 * PostgreSQL settings of an embedded PGlite, sized for one process on a small machine rather
 * than PostgreSQL's server defaults, and the WebAssembly compiler it runs under.
 *
 * - **Buffers.** PGlite keeps its shared buffers inside its WebAssembly memory, which never
 *   shrinks once grown: with the default `shared_buffers = 128MB` the database thread alone held
 *   350–560 MB of resident memory; with 16 MB it opens at about 200 MB (docs/performance.md
 *   "Memory"). The data files are read through the host's file system, so pages evicted from
 *   these buffers are still served from the OS page cache.
 * - **Baseline compiler only** ({@link useBaselineWasmCompiler}). V8 compiles WebAssembly with
 *   Liftoff and then recompiles hot functions with TurboFan in background threads. PostgreSQL's
 *   SQL parser (`raw_parser`, one 105 KB function: bison's tables and actions) runs on every
 *   statement, so it tiers up within the first seconds of every process: that one compile took
 *   1.7–2.9 CPU-s and 600 MB of compiler memory, on top of 0.5 CPU-s of other tier-ups, so an
 *   embedded svc peaked at 0.8–1.1 GB of RSS shortly after it was ready and stayed 60–90 MB
 *   higher once idle. Liftoff alone opens PGlite with no peak, but its SQL is slower: 6–35 % more
 *   CPU per proxied request and about 0.6 times the throughput at 64 connections in the embedded
 *   default (the request-event inserts run in PGlite); numbers in docs/performance.md.
 */
import { PGlite } from "@electric-sql/pglite"
import * as v8 from "node:v8"

/** The settings, as `-c name=value` options of the single-user backend. */
export const embeddedSettings: Readonly<Record<string, string>> = {
  shared_buffers: "16MB",
  // PostgreSQL's own sizing (1/32 of shared_buffers), stated so it does not drift.
  wal_buffers: "512kB",
  work_mem: "4MB",
  maintenance_work_mem: "16MB",
  temp_buffers: "4MB"
}

/** PGlite's start parameters: its defaults, then {@link embeddedSettings}. */
export const startParams = (): Array<string> => [
  ...PGlite.defaultStartParams,
  ...Object.entries(embeddedSettings).flatMap(([name, value]) => ["-c", `${name}=${value}`])
]

/** V8 flags that keep every WebAssembly module compiled after them on Liftoff, never tiered up. */
export const baselineWasmFlags: ReadonlyArray<string> = [
  "--liftoff-only",
  "--no-wasm-tier-up",
  "--no-wasm-dynamic-tiering"
]

/** A V8 flag on Node's command line that chooses WebAssembly's compilers itself. */
const wasmCompilerFlag = /^--(no-?)?(liftoff|wasm[-_]tier|wasm[-_]dynamic[-_]tiering)/

/** Whether svc may choose the WebAssembly compiler: no flag of `execArgv` chose it already. */
export const mayChooseWasmCompiler = (execArgv: ReadonlyArray<string>): boolean =>
  !execArgv.some((flag) => wasmCompilerFlag.test(flag))

let chosen: boolean | undefined

/**
 * Puts this process's WebAssembly on the baseline compiler before PGlite compiles its module
 * (V8 reads these flags when a module is compiled; a module compiled before is unchanged), once
 * per process. Nothing changes when Node's command line already names a WebAssembly compiler
 * flag (`--liftoff`, `--no-liftoff-only`, `--wasm-tier-up`, …: V8 flags cannot be given in
 * `NODE_OPTIONS`; `SVC_NODE_OPTIONS` puts them on `svc serve`'s command line): that choice is
 * kept. Every WebAssembly module the process compiles afterwards runs on Liftoff too (QuickJS of
 * the hook sandbox in the embedded default). Answers whether the flags were set.
 */
export const useBaselineWasmCompiler = (execArgv: ReadonlyArray<string> = process.execArgv): boolean => {
  if (chosen === undefined) {
    chosen = mayChooseWasmCompiler(execArgv)
    if (chosen) v8.setFlagsFromString(baselineWasmFlags.join(" "))
  }
  return chosen
}
