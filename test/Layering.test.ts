/**
 * Imports run one way (ARCHITECTURE.md "Layout"): between the workspace packages, and between the
 * feature folders of `packages/server/src`. The orders below are the single statement of the
 * layering; a violation names the file, the import and the rule it breaks.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const repo = path.resolve(import.meta.dirname, "..")

/** Which workspace packages each package may import (its own files are always allowed). */
const packageImports: Readonly<Record<string, ReadonlyArray<string>>> = {
  domain: [],
  sql: ["domain"],
  cluster: ["domain", "sql"],
  server: ["domain", "sql", "cluster"],
  cli: ["domain"],
  // Published for host applications (docs/testing.md): the typed client carries no server code;
  // the test kit starts the server's own composition in process.
  client: ["domain"],
  testing: ["domain", "sql", "cluster", "server", "client"]
}

/**
 * Feature folders of `packages/server/src`, top to bottom: a file may import its own folder and
 * any folder listed after it, never one listed before it. `.` is the entry (`main.ts`, `Serve.ts`).
 */
const serverLayers: ReadonlyArray<string> = [
  ".",
  "http",
  "swagger",
  "proxy",
  "worker",
  "connections",
  "auth",
  "events",
  "resources",
  "ratelimit",
  "hooks",
  "oauth",
  "crypto",
  "stores",
  "outbound",
  "telemetry",
  "config"
]

const sourceFiles = (dir: string): ReadonlyArray<string> => {
  const out: Array<string> = []
  const walk = (d: string) => {
    for (const entry of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name)
      if (entry.isDirectory()) {
        if (entry.name !== "node_modules" && entry.name !== "dist") walk(p)
      } else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) out.push(p)
    }
  }
  walk(dir)
  return out.sort()
}

/** Static, dynamic and type-only import specifiers of a file. */
const importsOf = (file: string): ReadonlyArray<string> =>
  ts.preProcessFile(fs.readFileSync(file, "utf8"), true, true).importedFiles.map((f) => f.fileName)

const packageOfPath = (abs: string): string | undefined => {
  const rel = path.relative(path.join(repo, "packages"), abs).split(path.sep)
  return rel[0] !== undefined && rel[0] !== ".." && rel[0] in packageImports ? rel[0] : undefined
}

/** The workspace package an import names or reaches, if any. */
const importedPackage = (file: string, specifier: string): string | undefined => {
  const scoped = /^@svc\/([^/]+)/.exec(specifier)
  if (scoped) return scoped[1]
  if (specifier.startsWith(".")) return packageOfPath(path.resolve(path.dirname(file), specifier))
  return undefined
}

const serverSrc = path.join(repo, "packages/server/src")

const serverFolder = (abs: string): string => {
  const rel = path.relative(serverSrc, abs).split(path.sep)
  return rel.length > 1 ? rel[0]! : "."
}

describe("layering", () => {
  it("the layer lists name every package and server folder there is", () => {
    const packages = fs.readdirSync(path.join(repo, "packages")).filter((p) => !p.startsWith("."))
    expect(packages.sort()).toEqual(Object.keys(packageImports).sort())
    const folders = fs
      .readdirSync(serverSrc, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
    expect(folders.filter((f) => !serverLayers.includes(f))).toEqual([])
  })

  it("packages import only the packages below them", () => {
    const violations: Array<string> = []
    for (const [pkg, allowed] of Object.entries(packageImports)) {
      for (const file of sourceFiles(path.join(repo, "packages", pkg, "src"))) {
        for (const specifier of importsOf(file)) {
          const target = importedPackage(file, specifier)
          if (target !== undefined && target !== pkg && !allowed.includes(target)) {
            violations.push(
              `${path.relative(repo, file)} imports ${specifier}: ${pkg} may import ${allowed.join(", ") || "no package"}`
            )
          }
        }
      }
    }
    expect(violations).toEqual([])
  })

  it("server feature folders import only their own folder and the folders below", () => {
    const violations: Array<string> = []
    for (const file of sourceFiles(serverSrc)) {
      if (file.endsWith(".test.ts")) continue
      const from = serverFolder(file)
      for (const specifier of importsOf(file)) {
        if (!specifier.startsWith(".")) continue
        const to = serverFolder(path.resolve(path.dirname(file), specifier))
        if (to === from) continue
        if (serverLayers.indexOf(to) < serverLayers.indexOf(from)) {
          violations.push(`${path.relative(serverSrc, file)} imports ${specifier}: ${to}/ is above ${from}/`)
        }
      }
    }
    expect(violations).toEqual([])
  })

  it("detects an import that runs back up", () => {
    const file = path.join(serverSrc, "stores/Example.ts")
    const to = serverFolder(path.resolve(path.dirname(file), "../http/Servers.ts"))
    expect(serverLayers.indexOf(to) < serverLayers.indexOf(serverFolder(file))).toBe(true)
  })
})
