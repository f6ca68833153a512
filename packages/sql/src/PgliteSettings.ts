/**
 * PostgreSQL settings of an embedded PGlite, sized for one process on a small machine rather
 * than PostgreSQL's server defaults. PGlite keeps its shared buffers inside its WebAssembly
 * memory, which never shrinks once grown: with the default `shared_buffers = 128MB` the database
 * thread alone held 350–560 MB of resident memory; with 16 MB it opens at about 200 MB
 * (docs/performance.md "Memory"). The data files are read through the host's file system, so
 * pages evicted from these buffers are still served from the OS page cache.
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
