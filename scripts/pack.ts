/**
 * `npm run pack:packages`: builds the two packages published for host applications and packs
 * them with `npm pack` (docs/testing.md):
 *
 * - `@svc/client` — `SvcClient` and `SvcAdminClient` with the domain's HttpApi declarations
 *   bundled in (no server code), and the declaration files of the client and the domain;
 * - `@svc/testing` — `SvcTest` and `FakeUpstream`, with the server bundled in and the worker
 *   entries svc starts by URL (`PgliteThread.js`, `HookWorker.js`) beside them.
 *
 * Both bundles leave `effect` (a peer: the host's own copy, so services and layers are shared) and
 * the packages scripts/build.ts keeps external as imports; each packed `package.json` lists exactly
 * the packages its bundle imports, pinned to the versions of this repository's lockfile install.
 * Declaration files come from `tsc -b` with `@svc/domain/...` rewritten to the copies shipped inside.
 *
 * Usage: `node scripts/pack.ts [--out <dir>]` (default `dist/packages/`); prints the tarballs.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import { isBuiltin } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { distUrlModule, isExternal, rebaseImportMetaUrls, repoRoot } from "./build.ts"

/** The version both packages are published with. */
const version = (
  JSON.parse(fs.readFileSync(path.join(repoRoot, "packages/testing/package.json"), "utf8")) as {
    version: string
  }
).version

const isEffect = (id: string) => id === "effect" || id.startsWith("effect/")

interface PackageSpec {
  readonly name: string
  readonly dir: string
  readonly description: string
  /** Entry name (`dist/<name>.js`) to repository-relative source. */
  readonly entries: Readonly<Record<string, string>>
  /** Entries that are subpath exports (the rest are worker files loaded by URL). */
  readonly exports: ReadonlyArray<string>
  readonly external: (id: string) => boolean
  /** Packages the bundle loads only by `import()` that the package still needs (not found by the static scan). */
  readonly dynamicDependencies?: ReadonlyArray<string>
  /** Declaration files: `from` (a tsc `dist/` folder) copied to `to` inside the package's `dist/`. */
  readonly declarations: ReadonlyArray<{ readonly from: string; readonly to: string }>
}

const packages: ReadonlyArray<PackageSpec> = [
  {
    name: "@svc/client",
    dir: "packages/client",
    description: "The typed client of svc's api (effect HttpApiClient over svc's HttpApi declarations)",
    entries: { SvcClient: "packages/client/src/SvcClient.ts", SvcAdminClient: "packages/client/src/SvcAdminClient.ts" },
    exports: ["SvcClient", "SvcAdminClient"],
    external: isEffect,
    declarations: [
      { from: "packages/client/dist", to: "." },
      { from: "packages/domain/dist", to: "domain" }
    ]
  },
  {
    name: "@svc/testing",
    dir: "packages/testing",
    description: "An in-process svc for a host application's tests (SvcTest.layer, SvcTest.start, FakeUpstream)",
    entries: {
      SvcTest: "packages/testing/src/SvcTest.ts",
      FakeUpstream: "packages/testing/src/FakeUpstream.ts",
      PgliteThread: "packages/sql/src/PgliteThread.ts",
      HookWorker: "packages/server/src/hooks/HookWorker.ts"
    },
    exports: ["SvcTest", "FakeUpstream"],
    external: (id) => isEffect(id) || id.startsWith("@effect/") || id.startsWith("@svc/client/") || isExternal(id),
    // The admin-api (`adminApi: true`) makes its development certificate with selfsigned, loaded on first use.
    dynamicDependencies: ["selfsigned"],
    declarations: [{ from: "packages/testing/dist", to: "." }]
  }
]

/** The package a bare specifier names (`@scope/name/sub` → `@scope/name`). */
const packageName = (specifier: string) => {
  const parts = specifier.split("/")
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? specifier)
}

const staticImport = /(?:^|[;\n])\s*(?:import|export)\s*(?:[^"'();]*?\sfrom\s*)?["']([^"']+)["']/g
// CommonJS packages loaded on first use through `createRequire` (Ajv): `require("ajv/dist/2020.js")`,
// renamed `require$1(…)` by the bundler when the name is taken.
const requireCall = /\brequire(?:\$\d+)?\(\s*["']([^"'.][^"']*)["']\s*\)/g
// An entry's own top-level `await import("./chunks/…")` (`@svc/testing/SvcTest` loads the kit so).
const topLevelImport = /^const \w+ = await import\(["'](\.[^"']+)["']\)/gm

/**
 * The packages a bundle needs: the bare specifiers imported statically (or `require`d on first use)
 * by its entry files and the chunks they import statically, or load at the top level of an entry
 * (`await import(…)`, which every import of the entry runs). A chunk loaded only by `import()` on
 * demand (S3 blob storage, the gRPC exporter) is left out with its imports: the test kit's
 * configuration never loads it.
 */
const neededPackages = (dir: string, entries: ReadonlyArray<string>): ReadonlySet<string> => {
  const found = new Set<string>()
  const seen = new Set<string>()
  const entryFiles = entries.map((name) => path.join(dir, `${name}.js`))
  const queue = [...entryFiles]
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (seen.has(file)) continue
    seen.add(file)
    if (entryFiles.includes(file)) {
      for (const match of fs.readFileSync(file, "utf8").matchAll(topLevelImport)) {
        queue.push(path.resolve(path.dirname(file), match[1] ?? ""))
      }
    }
    for (const match of fs.readFileSync(file, "utf8").matchAll(staticImport)) {
      const specifier = match[1] ?? ""
      if (specifier.startsWith(".")) queue.push(path.resolve(path.dirname(file), specifier))
      else if (!specifier.startsWith("node:") && !specifier.startsWith("svc:")) found.add(packageName(specifier))
    }
    for (const match of fs.readFileSync(file, "utf8").matchAll(requireCall)) {
      const name = packageName(match[1] ?? "")
      if (!isBuiltin(name) && fs.existsSync(path.join(repoRoot, "node_modules", name, "package.json"))) found.add(name)
    }
  }
  return found
}

/** The version of `name` installed in this repository (the lockfile's). */
const installedVersion = (name: string): string =>
  (
    JSON.parse(fs.readFileSync(path.join(repoRoot, "node_modules", name, "package.json"), "utf8")) as {
      version: string
    }
  ).version

const rewriteDeclarations = (file: string, domainDir: string | undefined) => {
  let text = fs.readFileSync(file, "utf8")
  if (domainDir !== undefined) {
    text = text.replace(/(["'])@svc\/domain\/([^"']+)\1/g, (_all, quote: string, sub: string) => {
      const relative = path.relative(path.dirname(file), path.join(domainDir, `${sub}.js`))
      return `${quote}${relative.startsWith(".") ? relative : `./${relative}`}${quote}`
    })
  }
  text = text.replace(/(["'])(\.{1,2}\/[^"']+)\.ts\1/g, "$1$2.js$1").replace(/\n\/\/# sourceMappingURL=.*$/, "\n")
  fs.writeFileSync(file, text)
}

const copyDeclarations = (spec: PackageSpec, distOut: string) => {
  const domainDir = spec.declarations.some((d) => d.to === "domain") ? path.join(distOut, "domain") : undefined
  for (const { from, to } of spec.declarations) {
    const source = path.join(repoRoot, from)
    for (const entry of fs.readdirSync(source, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith(".d.ts")) continue
      const relative = path.relative(source, path.join(entry.parentPath, entry.name))
      if (relative.split(path.sep).includes("testing") || entry.name.endsWith(".test.d.ts")) continue
      const target = path.join(distOut, to, relative)
      fs.mkdirSync(path.dirname(target), { recursive: true })
      fs.copyFileSync(path.join(source, relative), target)
      rewriteDeclarations(target, domainDir)
    }
  }
}

const bundle = async (spec: PackageSpec, distOut: string) => {
  const { build } = await import("rolldown")
  await build({
    input: Object.fromEntries(Object.entries(spec.entries).map(([name, file]) => [name, path.join(repoRoot, file)])),
    platform: "node",
    external: spec.external,
    plugins: [distUrlModule, rebaseImportMetaUrls(spec.entries, distOut)],
    logLevel: "warn",
    onLog(level, log, handler) {
      if (log.code === "INVALID_ANNOTATION" || log.code === "EVAL") return
      handler(level, log)
    },
    output: {
      dir: distOut,
      format: "esm",
      sourcemap: false,
      entryFileNames: "[name].js",
      chunkFileNames: "chunks/[name]-[hash].js",
      minify: false
    }
  })
}

/** Stages one package in `<work>/<name>` and packs it into `out`; answers the tarball's path. */
const packOne = async (spec: PackageSpec, work: string, out: string): Promise<string> => {
  const stage = path.join(work, spec.name.replace("@svc/", ""))
  const distOut = path.join(stage, "dist")
  fs.rmSync(stage, { recursive: true, force: true })
  fs.mkdirSync(distOut, { recursive: true })
  await bundle(spec, distOut)
  copyDeclarations(spec, distOut)
  const imports = [...neededPackages(distOut, Object.keys(spec.entries)), ...(spec.dynamicDependencies ?? [])]
    .filter((name, index, all) => name !== spec.name && all.indexOf(name) === index)
    .sort()
  const peers = imports.filter((name) => name === "effect")
  const dependencies = Object.fromEntries(
    imports
      .filter((name) => name !== "effect")
      .map((name) => [name, name.startsWith("@svc/") ? version : installedVersion(name)])
  )
  const manifest = {
    name: spec.name,
    version,
    description: spec.description,
    type: "module",
    exports: Object.fromEntries(
      spec.exports.map((name) => [`./${name}`, { types: `./dist/${name}.d.ts`, default: `./dist/${name}.js` }])
    ),
    files: ["dist", "README.md"],
    engines: { node: ">=22.19" },
    peerDependencies: Object.fromEntries(peers.map((name) => [name, installedVersion(name)])),
    dependencies
  }
  fs.writeFileSync(path.join(stage, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`)
  fs.copyFileSync(path.join(repoRoot, spec.dir, "README.md"), path.join(stage, "README.md"))
  const packed = JSON.parse(
    execFileSync("npm", ["pack", stage, "--pack-destination", out, "--json", "--silent"], {
      cwd: work,
      encoding: "utf8"
    })
  ) as ReadonlyArray<{ filename: string }>
  const filename = packed[0]?.filename
  if (filename === undefined) throw new Error(`npm pack ${spec.name} produced no tarball`)
  return path.join(out, filename)
}

/** Type-checks and emits the declarations, bundles and packs both packages into `out`; answers the tarballs. */
export const packPackages = async (out: string): Promise<ReadonlyArray<string>> => {
  execFileSync(path.join(repoRoot, "node_modules/.bin/tsc"), ["-b", "packages/client", "packages/testing"], {
    cwd: repoRoot,
    stdio: "inherit"
  })
  fs.mkdirSync(out, { recursive: true })
  const work = fs.mkdtempSync(path.join(out, ".stage-"))
  try {
    const tarballs: Array<string> = []
    for (const spec of packages) tarballs.push(await packOne(spec, work, out))
    return tarballs
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { out: { type: "string" } } })
  const tarballs = await packPackages(path.resolve(values.out ?? path.join(repoRoot, "dist/packages")))
  for (const tarball of tarballs) console.log(tarball)
}
