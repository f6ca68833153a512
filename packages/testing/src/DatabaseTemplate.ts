/**
 * A migrated PGlite data directory kept between test runs (docs/testing.md "Start-up time"): the
 * first start of a schema version applies every migration into a template under the cache
 * directory; every start after copies the template instead of migrating again.
 */
import * as Migrations from "@svc/sql/Migrations"
import * as PgliteClient from "@svc/sql/PgliteClient"
import { Effect, Layer } from "effect"
import { createHash } from "node:crypto"
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
  for (const spare of (await spares(template)).ready) {
    try {
      await fs.rename(spare, target)
      return
    } catch {
      // taken by a concurrent start, or on another file system: try the next, then copy
    }
  }
  await fs.cp(template, target, { recursive: true })
}

/**
 * Copies `template` into a new spare for a later start, unless `maxSpares` are ready or being
 * written; removes copies abandoned mid-way. Errors only cost the next start a copy.
 */
export const prepareSpare = async (template: string): Promise<void> => {
  const { ready, copying } = await spares(template)
  for (const dir of copying) {
    const stat = await fs.stat(dir).catch(() => undefined)
    if (stat !== undefined && Date.now() - stat.mtimeMs > abandonedAfterMs)
      await fs.rm(dir, { recursive: true, force: true })
  }
  if (ready.length + copying.length >= maxSpares) return
  const suffix = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`
  const copying_ = `${template}.copying-${suffix}`
  try {
    await fs.cp(template, copying_, { recursive: true })
    await fs.rename(copying_, `${template}.spare-${suffix}`)
  } catch {
    await fs.rm(copying_, { recursive: true, force: true })
  }
}
