/**
 * A prepared `initdb` for the embedded database's first start (issue 30). PGlite runs PostgreSQL's
 * `initdb` when its data directory holds no database: 2.3 CPU-s with WebAssembly on Liftoff, and
 * a second PostgreSQL instance whose memory the process kept, so a first `svc serve` ended 100–370
 * MB above a restart. The build (`scripts/build.ts`) runs `initdb` once per PGlite version and
 * keeps the result as PGlite's own data-directory dump (a gzipped tar, ~4.5 MB) in
 * `packages/sql/pglite-template/`; a first open unpacks it instead (`loadDataDir`, about 1 CPU-s).
 * A fresh `initdb` and the template give the same cluster (one `initdb` per cluster makes the
 * system identifier, which PGlite does not use). Without the file (a build that never made it)
 * PGlite runs `initdb` as before.
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { useBaselineWasmCompiler } from "./WasmCompiler.ts"

/** Where the build keeps the template (git-ignored). */
export const templateDir = fileURLToPath(new URL("../pglite-template/", import.meta.url))

/** The version of the installed PGlite: a template is used only by the version that made it. */
export const pgliteVersion = (): string => {
  const entry = createRequire(import.meta.url).resolve("@electric-sql/pglite")
  let dir = path.dirname(entry)
  while (!fs.existsSync(path.join(dir, "package.json"))) dir = path.dirname(dir)
  return (JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { version: string }).version
}

/** The template file of the installed PGlite. */
export const templateFile = (): string => path.join(templateDir, `initdb-${pgliteVersion()}.tar.gz`)

/**
 * The template to open `dataDir` from: `file` when `dataDir` is a directory on disk that holds
 * no database yet (no `PG_VERSION`) and `file` exists; otherwise undefined (open as is).
 */
export const templateFor = (dataDir: string, file: string = templateFile()): string | undefined => {
  if (dataDir.includes("://")) return undefined
  if (fs.existsSync(path.join(dataDir, "PG_VERSION"))) return undefined
  return fs.existsSync(file) ? file : undefined
}

/** PGlite's `loadDataDir` option for `template` (undefined: none). */
export const loadDataDir = (template: string | undefined): { loadDataDir?: Blob } =>
  template === undefined ? {} : { loadDataDir: new Blob([fs.readFileSync(template)]) }

/**
 * Makes `file` when it does not exist: a fresh in-memory PGlite (`initdb`), dumped. Written to a
 * temporary name and renamed, so a reader never sees half a file; other versions' templates in
 * the same directory are removed. Answers whether it wrote one.
 */
export const writeTemplate = async (file: string = templateFile()): Promise<boolean> => {
  if (fs.existsSync(file)) return false
  useBaselineWasmCompiler()
  const { PGlite } = await import("@electric-sql/pglite")
  const db = await PGlite.create("memory://")
  const dump = await db.dumpDataDir("gzip")
  await db.close()
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const partial = `${file}.${process.pid}.partial`
  fs.writeFileSync(partial, Buffer.from(await dump.arrayBuffer()))
  fs.renameSync(partial, file)
  for (const other of fs.readdirSync(path.dirname(file))) {
    if (other.startsWith("initdb-") && other !== path.basename(file) && !other.endsWith(".partial")) {
      fs.rmSync(path.join(path.dirname(file), other), { force: true })
    }
  }
  return true
}
