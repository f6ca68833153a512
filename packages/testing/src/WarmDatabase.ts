/**
 * The directory of a test's svc with its database already opening (docs/testing.md "Start-up
 * time"): a run directory `<cacheDir>/run-<pid>-<random>` holding a copy of the migrated template
 * at `.svc/db`, on which PGlite's worker thread is opened ahead (`PgliteOpen.openAhead`), so the
 * next start of the process takes a database that is open or nearly so. One is prepared when the
 * kit is imported (`OpenOnImport.ts`) and one after every start (while that start's tests run).
 * Run directories of processes that no longer run are removed.
 */
import { closeAhead, openAhead } from "@svc/sql/PgliteOpen"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { copyTemplate, processGone } from "./DatabaseTemplate.ts"
import { type RunDir, readyRunDirs } from "./OpenOnImport.ts"

const ready = readyRunDirs

/** A new, empty run directory under the template's cache directory. */
const makeRunDir = async (template: string): Promise<string> => {
  const cacheDir = path.dirname(template)
  await fs.mkdir(cacheDir, { recursive: true })
  return fs.mkdtemp(path.join(cacheDir, `run-${process.pid}-`))
}

/** Removes run directories left by processes that no longer run (a run killed before its stop). */
const sweep = async (cacheDir: string): Promise<void> => {
  const names = await fs.readdir(cacheDir).catch(() => [] as Array<string>)
  for (const name of names) {
    const pid = Number(/^run-(\d+)-/.exec(name)?.[1])
    if (Number.isSafeInteger(pid) && pid > 0 && processGone(pid)) {
      await fs.rm(path.join(cacheDir, name), { recursive: true, force: true })
    }
  }
}

/** A run directory with a copy of `template`, its database not opened. */
export const freshRunDir = async (template: string): Promise<RunDir> => {
  const dir = await makeRunDir(template)
  const dataDir = path.join(dir, ".svc", "db")
  await copyTemplate(template, dataDir)
  return { dir, dataDir }
}

/** Prepares the next start's run directory of `template` in the background, unless one is ready. */
export const prepareRunDir = (template: string): Promise<unknown> => {
  const pending = ready.get(template)
  if (pending !== undefined) return pending
  const prepared = (async () => {
    const run = await freshRunDir(template)
    openAhead({ dataDir: run.dataDir })
    void sweep(path.dirname(template)).catch(() => undefined)
    return run
  })().catch(() => undefined)
  ready.set(template, prepared)
  return prepared
}

/** The prepared run directory of `template`, taken (undefined: none; the caller makes a fresh one). */
export const takeRunDir = async (template: string): Promise<RunDir | undefined> => {
  for (const [other, prepared] of ready) {
    if (other === template) continue
    // prepared from another template (another schema version's, on import): of no use here
    ready.delete(other)
    void prepared.then((run) => (run === undefined ? undefined : removeRunDir(run)))
  }
  const prepared = ready.get(template)
  ready.delete(template)
  return prepared
}

/** Removes a run directory, closing a thread opened ahead on it that no start took over. */
export const removeRunDir = async (run: RunDir): Promise<void> => {
  await closeAhead(run.dataDir).catch(() => false)
  await fs.rm(run.dir, { recursive: true, force: true })
}
