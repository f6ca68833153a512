/**
 * The production build (issue 30, docs/performance.md "Start-up and CLI"): bundles the `svc` and
 * `cli` executables with rolldown into `dist/` at the repository root (git-ignored), ESM with
 * source maps, then the browser bundles (`packages/server/ui/build.ts`).
 *
 * - `dist/svc.js` from `packages/server/src/main.ts`, `dist/cli.js` from `packages/cli/src/main.ts`,
 *   and the two worker-thread entries svc starts by URL: `dist/PgliteThread.js` (the embedded
 *   database) and `dist/HookWorker.js` (the hook sandbox). Shared code goes to `dist/chunks/`;
 *   what svc loads at first use (`import()`) is a chunk of its own.
 * - Workspace packages and pure-ESM dependencies (effect, @effect/*, yaml, jose, re2js) are
 *   bundled and tree-shaken; dependencies that load files beside their own code (PGlite's and
 *   QuickJS's WebAssembly), are CommonJS with dynamic `require`s, or are large and loaded lazily
 *   (gRPC, the AWS SDK, ajv, ioredis, undici, pg, selfsigned) stay imports of `node_modules`.
 * - `new URL("<relative>", import.meta.url)` in a source file is rewritten to point from `dist/`
 *   at the same file (a `.ts` entry becomes its `.js` in `dist/`), so workers and the UI bundles
 *   are found from the built files.
 *
 * Incremental: a hash of every input (the workspace packages' non-test sources, the lockfile and
 * this script) is stamped in `dist/.build-hash`; when it matches, nothing is loaded or written
 * (about 0.1 CPU-s), so `npm start` pays for a build only after an edit. `--force` rebuilds.
 *
 * Run by `npm run build` (after `tsc -b`), `npm start` (before starting svc) and the test run's
 * global setup (the tests start the built `dist/svc.js`).
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
export const distDir = path.join(repoRoot, "dist")
const stamp = path.join(distDir, ".build-hash")

/** Entry name (its file in `dist/` is `<name>.js`) to source file. */
const entries: Readonly<Record<string, string>> = {
  svc: "packages/server/src/main.ts",
  cli: "packages/cli/src/main.ts",
  PgliteThread: "packages/sql/src/PgliteThread.ts",
  HookWorker: "packages/server/src/hooks/HookWorker.ts"
}

/** Imported from `node_modules` at run time, never bundled (see the header). */
const externalPackages = [
  "@electric-sql/pglite",
  "quickjs-emscripten",
  "@jitl/",
  "@grpc/",
  "@aws-sdk/",
  "@smithy/",
  "ajv",
  "ajv-formats",
  "ioredis",
  "undici",
  "pg",
  "pg-",
  "selfsigned",
  "ws",
  "redis",
  "@redis/"
]
const isExternal = (id: string): boolean =>
  id.startsWith("node:") ||
  externalPackages.some((name) =>
    name.endsWith("/") || name.endsWith("-") ? id.startsWith(name) : id === name || id.startsWith(`${name}/`)
  )

const packagesDir = path.join(repoRoot, "packages")
const workspaces = ["domain", "sql", "cluster", "server", "cli"]

/** Every input of the bundle: the workspaces' sources (tests excluded), their manifests, the lockfile, this script. */
const inputFiles = (): Array<string> => {
  const files: Array<string> = []
  for (const workspace of workspaces) {
    const src = path.join(packagesDir, workspace, "src")
    for (const entry of fs.readdirSync(src, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith(".ts") || entry.name.endsWith(".test.ts")) continue
      files.push(path.join(entry.parentPath, entry.name))
    }
    files.push(path.join(packagesDir, workspace, "package.json"))
  }
  files.push(path.join(repoRoot, "package-lock.json"), fileURLToPath(import.meta.url))
  return files.sort()
}

export const sourceHash = (): string => {
  const hash = createHash("sha256")
  hash.update(`node ${process.version}\n`)
  for (const file of inputFiles()) {
    hash.update(`${path.relative(repoRoot, file)}\n`)
    hash.update(fs.readFileSync(file))
  }
  return hash.digest("hex")
}

const upToDate = (hash: string): boolean => {
  try {
    return (
      fs.readFileSync(stamp, "utf8") === hash &&
      Object.keys(entries).every((name) => fs.existsSync(path.join(distDir, `${name}.js`)))
    )
  } catch {
    return false
  }
}

const entryByFile = new Map(Object.entries(entries).map(([name, file]) => [path.join(repoRoot, file), name]))

const relativeUrl = /new URL\(\s*(["'])(\.{1,2}\/[^"']*)\1\s*,\s*import\.meta\.url\s*\)/g

/** Rewrites `new URL("./x", import.meta.url)` of a source file so it points from `dist/` at the same place. */
const rebaseUrls = {
  name: "svc:rebase-import-meta-urls",
  transform: {
    filter: { id: /packages\/[^/]+\/src\/.*\.ts$/ },
    handler(code: string, id: string) {
      if (!code.includes("import.meta.url")) return null
      const rewritten = code.replace(relativeUrl, (_whole, quote: string, relative: string) => {
        const target = path.resolve(path.dirname(id), relative)
        const entry = entryByFile.get(target)
        // chunks live in dist/chunks/, entries in dist/: resolve from dist/ either way
        const fromDist = entry === undefined ? path.relative(distDir, target) : `${entry}.js`
        const suffix = relative.endsWith("/") && !fromDist.endsWith("/") ? "/" : ""
        return `new URL(${quote}${fromDist}${suffix}${quote}, svcDistUrl)`
      })
      if (rewritten === code) return null
      return { code: `${rewritten}\nimport { svcDistUrl } from "svc:dist-url"\n`, map: null }
    }
  }
}

/** `svc:dist-url`: the URL of `dist/` whichever chunk asks (entries in dist/, chunks in dist/chunks/). */
const distUrlModule = {
  name: "svc:dist-url",
  resolveId(id: string) {
    return id === "svc:dist-url" ? "\0svc:dist-url" : null
  },
  load(id: string) {
    if (id !== "\0svc:dist-url") return null
    return `export const svcDistUrl = new URL(import.meta.url.includes("/chunks/") ? "../" : "./", import.meta.url)\n`
  }
}

/** Bundles every entry into `dist/` (replacing its previous content). */
const bundle = async (): Promise<void> => {
  const { build } = await import("rolldown")
  const staging = path.join(repoRoot, `.dist-staging-${process.pid}`)
  fs.rmSync(staging, { recursive: true, force: true })
  await build({
    input: Object.fromEntries(Object.entries(entries).map(([name, file]) => [name, path.join(repoRoot, file)])),
    platform: "node",
    external: isExternal,
    plugins: [distUrlModule, rebaseUrls],
    logLevel: "warn",
    onLog(level, log, handler) {
      // effect's own `/*#__PURE__*/` comments in places rolldown does not read are harmless
      if (log.code === "INVALID_ANNOTATION" || log.code === "EVAL") return
      handler(level, log)
    },
    output: {
      dir: staging,
      format: "esm",
      sourcemap: true,
      entryFileNames: "[name].js",
      chunkFileNames: "chunks/[name]-[hash].js",
      minify: false
    }
  })
  const old = `${distDir}.old-${process.pid}`
  if (fs.existsSync(distDir)) fs.renameSync(distDir, old)
  fs.renameSync(staging, distDir)
  fs.rmSync(old, { recursive: true, force: true })
}

/** Builds `dist/` unless its stamp matches the sources (or `force`); answers whether it built. */
export const buildBundle = async (options: { readonly force?: boolean } = {}): Promise<boolean> => {
  const hash = sourceHash()
  if (!options.force && upToDate(hash)) return false
  await bundle()
  fs.writeFileSync(stamp, hash)
  return true
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const force = process.argv.includes("--force")
  const started = performance.now()
  const built = await buildBundle({ force })
  const ms = Math.round(performance.now() - started)
  if (built) console.log(`build: dist/ (svc, cli) in ${ms} ms`)
  if (!process.argv.includes("--no-ui")) {
    const ui = pathToFileURL(path.join(repoRoot, "packages/server/ui/build.ts")).href
    const { buildUi } = (await import(ui)) as { buildUi: (o: { force?: boolean }) => Promise<ReadonlyArray<string>> }
    const apps = await buildUi({ force })
    if (apps.length > 0) console.log(`build: ui ${apps.join(", ")}`)
  }
}
