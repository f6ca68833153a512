/**
 * The production build (`scripts/build.ts`, docs/performance.md "Start-up and CLI"): the test
 * run's global setup built `dist/` from the current sources; the executables run from it; the
 * `cli` bundle holds none of the server's code; `svc --help` loads none of the server; and an
 * unchanged tree is not rebuilt.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { describe, expect, it } from "vitest"
import { repoRoot } from "./support/SvcProcess.ts"

const dist = path.join(repoRoot, "dist")

interface BuildScript {
  readonly sourceHash: () => string
  readonly buildBundle: () => Promise<boolean>
}
const buildScript = async (): Promise<BuildScript> =>
  (await import(pathToFileURL(path.join(repoRoot, "scripts/build.ts")).href)) as BuildScript

/** `file` (in dist/) and every chunk it imports, statically or with `import()`, transitively. */
const closure = (file: string): Set<string> => {
  const seen = new Set<string>()
  const pending = [path.join(dist, file)]
  while (pending.length > 0) {
    const current = pending.pop()!
    if (seen.has(current)) continue
    seen.add(current)
    const code = fs.readFileSync(current, "utf8")
    for (const match of code.matchAll(/(?:from|import\()\s*"(\.{1,2}\/[^"]+\.js)"/g)) {
      pending.push(path.resolve(path.dirname(current), match[1]!))
    }
  }
  return seen
}

/** The repository files a set of built files came from (their source maps' `sources`). */
const sourcesOf = (files: Iterable<string>): Array<string> =>
  [...files].flatMap((file) => {
    const map = `${file}.map`
    if (!fs.existsSync(map)) return []
    const { sources } = JSON.parse(fs.readFileSync(map, "utf8")) as { sources: ReadonlyArray<string> }
    return sources.map((source) => path.relative(repoRoot, path.resolve(path.dirname(file), source)))
  })

const node = (args: ReadonlyArray<string>) =>
  execFileSync(process.execPath, args, { cwd: repoRoot, encoding: "utf8", timeout: 30_000 })

describe("production build", () => {
  it("dist/ is built from the current sources and is not rebuilt when nothing changed", async () => {
    const { sourceHash, buildBundle } = await buildScript()
    expect(fs.readFileSync(path.join(dist, ".build-hash"), "utf8")).toBe(sourceHash())
    for (const file of ["svc.js", "cli.js", "svc-main.js", "cli-main.js", "PgliteThread.js", "HookWorker.js"]) {
      expect(fs.existsSync(path.join(dist, file)), file).toBe(true)
    }
    const before = fs.statSync(path.join(dist, "svc-main.js")).mtimeMs
    expect(await buildBundle()).toBe(false)
    expect(fs.statSync(path.join(dist, "svc-main.js")).mtimeMs).toBe(before)
  })

  it("bundles ship source maps that point at the TypeScript sources", () => {
    const sources = sourcesOf([path.join(dist, "svc-main.js")])
    expect(sources).toContain("packages/server/src/main.ts")
  })

  it("the cli bundle holds no server, sql or cluster code", () => {
    const sources = sourcesOf(closure("cli.js"))
    expect(sources).toContain("packages/cli/src/main.ts")
    const foreign = sources.filter((source) => /^packages\/(server|sql|cluster)\//.test(source))
    expect(foreign).toEqual([])
  })

  it("svc --help imports nothing of the server beyond the command line", () => {
    // What `svc --help` loads: dist/svc.js, the static imports of its bundle, and the command line
    // (`SvcCommand.ts`), which the entry imports once the launcher has decided (its only `import()`).
    const entry = path.join(dist, "svc-main.js")
    const statics = new Set<string>()
    const pending = [
      entry,
      ...[...fs.readFileSync(entry, "utf8").matchAll(/\bimport\(\s*"(\.{1,2}\/[^"]+\.js)"\s*\)/g)].map((match) =>
        path.resolve(dist, match[1]!)
      )
    ]
    while (pending.length > 0) {
      const current = pending.pop()!
      if (statics.has(current)) continue
      statics.add(current)
      for (const match of fs.readFileSync(current, "utf8").matchAll(/\bfrom\s*"(\.{1,2}\/[^"]+\.js)"/g)) {
        pending.push(path.resolve(path.dirname(current), match[1]!))
      }
    }
    const server = sourcesOf(statics).filter((source) => source.startsWith("packages/server/src/"))
    expect(server.sort()).toEqual(
      [
        "packages/server/src/config/Durations.ts",
        "packages/server/src/config/Version.ts",
        "packages/server/src/Launcher.ts",
        "packages/server/src/main.ts",
        // the launcher's flag for the relay's collector: one constant, no imports
        "packages/server/src/outbound/RelayedChunks.ts",
        "packages/server/src/SvcCommand.ts"
      ].sort()
    )
    const help = node([path.join(dist, "svc.js"), "--help"])
    expect(help).toMatch(/serve/)
    expect(help).toMatch(/migrate/)
  })
})
