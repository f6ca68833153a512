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

export { baselineWasmFlags, mayChooseWasmCompiler, useBaselineWasmCompiler } from "./WasmCompiler.ts"
