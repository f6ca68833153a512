/**
 * Builds the browser bundles (docs/ui.md) with Vite: `connect/` (the Connect UI, served by the
 * public service under `/connect/`) and `admin/` (the admin UI, served by the admin-api under
 * `/ui/`) into `dist/<app>/` (git-ignored). A bundle whose sources (this folder, Vite's and
 * Preact's versions) have not changed since its last build is kept, so `npm start` and each test
 * run only pay for a build after an edit. `--force` rebuilds anyway.
 *
 * Run by `npm run build:ui`, by `scripts/build.ts` (which `npm start` and `npm run build` run) and by
 * the test run's global setup.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const uiDir = path.dirname(fileURLToPath(import.meta.url))
const distDir = path.join(uiDir, "dist")
const apps = { connect: "/connect/", admin: "/ui/" } as const
type App = keyof typeof apps

const versionOf = (pkg: string): string => {
  const file = createRequire(import.meta.url).resolve(`${pkg}/package.json`)
  return (JSON.parse(fs.readFileSync(file, "utf8")) as { version: string }).version
}

/** Hash of every source file of the folder (dist excluded) and the toolchain's versions. */
const sourceHash = (): string => {
  const hash = createHash("sha256")
  hash.update(`vite ${versionOf("vite")} preact ${versionOf("preact")}\n`)
  const files = fs
    .readdirSync(uiDir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.join(entry.parentPath, entry.name))
    .filter((file) => !path.relative(uiDir, file).split(path.sep).includes("dist"))
    .sort()
  for (const file of files) {
    hash.update(`${path.relative(uiDir, file)}\n`)
    hash.update(fs.readFileSync(file))
  }
  return hash.digest("hex")
}

const stampFile = (app: App) => path.join(distDir, app, ".source-hash")

const upToDate = (app: App, hash: string): boolean => {
  try {
    return fs.readFileSync(stampFile(app), "utf8") === hash && fs.existsSync(path.join(distDir, app, "index.html"))
  } catch {
    return false
  }
}

const buildApp = async (app: App, hash: string): Promise<void> => {
  // Built beside the live folder, then swapped in: a running svc never reads a half-written bundle.
  const staging = path.join(distDir, `.staging-${app}-${process.pid}`)
  // Vite is loaded only when a bundle is stale: an up-to-date check costs a hash of the folder
  const { build } = await import("vite")
  await build({
    configFile: false,
    root: path.join(uiDir, app),
    base: apps[app],
    logLevel: "warn",
    oxc: { jsx: { runtime: "automatic", importSource: "preact", development: false } },
    build: {
      outDir: staging,
      emptyOutDir: true,
      assetsDir: "assets",
      modulePreload: { polyfill: false },
      // No data: URLs for small assets: every file is a hashed, immutable asset.
      assetsInlineLimit: 0,
      sourcemap: false,
      target: "es2022"
    }
  })
  fs.writeFileSync(path.join(staging, ".source-hash"), hash)
  const live = path.join(distDir, app)
  const old = path.join(distDir, `.old-${app}-${process.pid}`)
  if (fs.existsSync(live)) fs.renameSync(live, old)
  fs.renameSync(staging, live)
  fs.rmSync(old, { recursive: true, force: true })
}

/** Builds every bundle that is missing or stale (all of them with `force`); answers what it built. */
export const buildUi = async (options: { readonly force?: boolean } = {}): Promise<ReadonlyArray<App>> => {
  const hash = sourceHash()
  const built: Array<App> = []
  fs.mkdirSync(distDir, { recursive: true })
  for (const app of Object.keys(apps) as Array<App>) {
    if (!options.force && upToDate(app, hash)) continue
    await buildApp(app, hash)
    built.push(app)
  }
  return built
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const built = await buildUi({ force: process.argv.includes("--force") })
  console.log(built.length === 0 ? "ui: bundles up to date" : `ui: built ${built.join(", ")} into ${distDir}`)
}
