/**
 * A migrated PGlite data directory kept between test runs (docs/testing.md "Start-up time"): the
 * first start of a schema version applies every migration into a template under the cache
 * directory; every start after copies the template instead of migrating again.
 */
import * as Migrations from "@svc/sql/Migrations"
import * as PgliteClient from "@svc/sql/PgliteClient"
import { Effect, Layer } from "effect"
import { createHash } from "node:crypto"
import { existsSync, constants as fsConstants } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"

/** The migrations svc applies, as `<id>_<name>` lines: the template's key (applied migrations are never edited). */
const schemaKey = Effect.gen(function* () {
  const main = yield* Migrations.mainLoader
  const metrics = yield* Migrations.appMetricsLoader
  const lines = [
    ...main.map(([id, name]) => `main ${id}_${name}`),
    ...metrics.map(([id, name]) => `metrics ${id}_${name}`)
  ]
  return createHash("sha256").update(lines.join("\n")).digest("hex").slice(0, 16)
})

const exists = (file: string) =>
  fs.stat(file).then(
    () => true,
    () => false
  )

/** Applies the main and app-metrics migrations to a fresh PGlite data directory at `dataDir`. */
const migrateInto = (dataDir: string) =>
  Effect.gen(function* () {
    yield* Migrations.migrateMain
    yield* Migrations.migrateAppMetrics
  }).pipe(Effect.provide(PgliteClient.layerWorker({ dataDir }).pipe(Layer.fresh)))

/** The migrated template's directory under `cacheDir` when it exists (undefined: not made yet). */
export const existingTemplate = (cacheDir: string) =>
  Effect.map(schemaKey, (key) => {
    const target = path.join(cacheDir, `pglite-${key}`)
    return existsSync(path.join(target, "PG_VERSION")) ? target : undefined
  }).pipe(Effect.orDie)

/**
 * The migrated template's directory under `cacheDir`, created on first use. Concurrent first
 * starts each build one in a directory of their own and rename it into place; the first rename
 * wins and the others are discarded.
 */
export const template = (cacheDir: string) =>
  Effect.gen(function* () {
    const key = yield* schemaKey
    const target = path.join(cacheDir, `pglite-${key}`)
    if (yield* Effect.promise(() => exists(path.join(target, "PG_VERSION")))) return target
    yield* Effect.promise(() => fs.mkdir(cacheDir, { recursive: true }))
    const staging = yield* Effect.promise(() => fs.mkdtemp(path.join(cacheDir, `pglite-${key}.building-`)))
    yield* migrateInto(path.join(staging, "db"))
    yield* Effect.promise(() =>
      fs.rename(path.join(staging, "db"), target).catch(async (error: unknown) => {
        if (!(await exists(path.join(target, "PG_VERSION")))) throw error
      })
    )
    yield* Effect.promise(() => fs.rm(staging, { recursive: true, force: true }))
    return target
  }).pipe(Effect.orDie)

/** Ready copies of the template kept beside it (`<template>.spare-*`), so a start renames one instead of copying. */
const maxSpares = 2
/** A copy still being written after this long was abandoned (its process exited mid-copy). */
const abandonedAfterMs = 10 * 60 * 1000

/**
 * Whether the copy `<template>.copying-<pid>-<random>` was left by a process that no longer runs
 * (a test run ends while its background copy is under way): removed at once instead of after
 * `abandonedAfterMs`, so it does not hold a spare's place.
 */
const writerGone = (dir: string): boolean => processGone(Number(/\.copying-(\d+)-[a-z0-9]+$/.exec(dir)?.[1]))

/** Whether `pid` names a process that no longer runs (never this one). */
export const processGone = (pid: number): boolean => {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return false
  } catch (error) {
    return (error as { code?: string }).code === "ESRCH"
  }
}

/** Copies a data directory; a copy-on-write clone where the file system has them (btrfs, XFS), else bytes. */
const copyDir = (from: string, to: string) => fs.cp(from, to, { recursive: true, mode: fsConstants.COPYFILE_FICLONE })

const spares = async (template: string) => {
  const dir = path.dirname(template)
  const names = await fs.readdir(dir).catch(() => [] as Array<string>)
  return {
    ready: names.filter((n) => n.startsWith(`${path.basename(template)}.spare-`)).map((n) => path.join(dir, n)),
    copying: names.filter((n) => n.startsWith(`${path.basename(template)}.copying-`)).map((n) => path.join(dir, n))
  }
}

/**
 * Puts a copy of `template` at `target`: a ready spare renamed into place when one exists (no
 * bytes copied; a rename is atomic, so concurrent starts never share one), else a copy.
 */
export const copyTemplate = async (template: string, target: string): Promise<void> => {
  // A rename needs the target's parent: without it every rename failed and every start copied.
  await fs.mkdir(path.dirname(target), { recursive: true })
  for (const spare of (await spares(template)).ready) {
    try {
      await fs.rename(spare, target)
      return
    } catch {
      // taken by a concurrent start, or on another file system: try the next, then copy
    }
  }
  await copyDir(template, target)
}

/**
 * Copies `template` into a new spare for a later start, unless `maxSpares` are ready or being
 * written; removes copies abandoned mid-way. Errors only cost the next start a copy.
 */
export const prepareSpare = async (template: string): Promise<void> => {
  const { ready, copying } = await spares(template)
  let writing = 0
  for (const dir of copying) {
    const stat = await fs.stat(dir).catch(() => undefined)
    if (stat !== undefined && (writerGone(dir) || Date.now() - stat.mtimeMs > abandonedAfterMs)) {
      await fs.rm(dir, { recursive: true, force: true })
    } else writing++
  }
  for (let spare = ready.length + writing; spare < maxSpares; spare++) await writeSpare(template)
}

/** Writes one spare copy of `template` (under a `.copying-` name, renamed when complete). */
const writeSpare = async (template: string): Promise<void> => {
  const suffix = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`
  const copying_ = `${template}.copying-${suffix}`
  try {
    await copyDir(template, copying_)
    await fs.rename(copying_, `${template}.spare-${suffix}`)
  } catch {
    await fs.rm(copying_, { recursive: true, force: true })
  }
}
