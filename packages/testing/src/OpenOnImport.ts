/**
 * Imported first by `SvcTest.ts`, so it runs before the rest of the kit is evaluated, and loads
 * nothing but PGlite's thread starter: when the default cache directory holds a ready copy of a
 * migrated template (a previous run made it), the copy becomes the process's first run directory
 * and its database starts opening in PGlite's thread now, while the rest of the kit is imported
 * (docs/testing.md "Start-up time"). The signing key of the process's starts is generated
 * meanwhile. The first start takes the run directory when its template is the one the current
 * migrations need (`WarmDatabase.takeRunDir`).
 */
import { openAhead, perProcess } from "@svc/sql/PgliteOpen"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { prepareSigningKey } from "./KitSecrets.ts"

/** Where the migrated template is kept unless `cacheDir` says otherwise. */
export const defaultCacheDir = path.join(os.tmpdir(), "svc-testing")

/** A run directory (`<cacheDir>/run-<pid>-<random>`) and the data directory in it, its database opening. */
export interface RunDir {
  readonly dir: string
  readonly dataDir: string
}

/**
 * The run directory prepared for the process's next start, by template: one map per process (on
 * `globalThis`), so a test file whose copy of the kit is evaluated anew in the same process (a test
 * runner isolating its files) takes the directory the previous file prepared.
 */
export const readyRunDirs = perProcess(
  "@svc/testing.readyRunDirs",
  () => new Map<string, Promise<RunDir | undefined>>()
)

/** The ready copies (`pglite-<key>.spare-*`) in the cache directory, of the most recent template first. */
const readySpares = (): Array<{ template: string; spare: string }> => {
  const names = fs.readdirSync(defaultCacheDir)
  const templates = names
    .filter((name) => /^pglite-[0-9a-f]+$/.test(name))
    .map((name) => ({ name, mtimeMs: fs.statSync(path.join(defaultCacheDir, name)).mtimeMs }))
    .sort((a, b) => b.mtimeMs - a.mtimeMs)
  return templates.flatMap(({ name }) =>
    names
      .filter((spare) => spare.startsWith(`${name}.spare-`))
      .map((spare) => ({ template: path.join(defaultCacheDir, name), spare: path.join(defaultCacheDir, spare) }))
  )
}

const openOnImport = () => {
  if (readyRunDirs.size > 0) return
  for (const { template, spare } of readySpares()) {
    const dir = fs.mkdtempSync(path.join(defaultCacheDir, `run-${process.pid}-`))
    const dataDir = path.join(dir, ".svc", "db")
    try {
      fs.mkdirSync(path.dirname(dataDir))
      fs.renameSync(spare, dataDir) // atomic: a concurrent process never takes the same copy
    } catch {
      fs.rmSync(dir, { recursive: true, force: true })
      continue
    }
    openAhead({ dataDir })
    readyRunDirs.set(template, Promise.resolve({ dir, dataDir }))
    return
  }
}

void prepareSigningKey()
try {
  openOnImport()
} catch {
  // no cache directory yet, or it cannot be read: the first start makes its database itself
}
