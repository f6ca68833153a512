/**
 * The documentation tells the truth about the code it describes:
 *
 * - `docs/svc.example.yaml` marks a key "not acted on yet" only when no server code reads it, and
 *   every key it does not so mark is a key of the configuration schema;
 * - every relative link of `README.md` and `docs/**` (markdown links, and repository paths quoted
 *   in backticks) names a file or folder that exists inside the repository.
 */
import { ConfigFile } from "@svc/server/config/ConfigSchema"
import type { SchemaAST } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { isMap, isScalar, isSeq, type Node, parseDocument } from "yaml"

const repo = path.resolve(import.meta.dirname, "..")
const serverSrc = path.join(repo, "packages/server/src")
const configDir = path.join(serverSrc, "config")

/** The phrase that marks a key of the example as accepted but unread. */
const notActedOn = /not acted on yet/i

interface ExampleKey {
  readonly path: ReadonlyArray<string>
  /** The comment on the key's own line, if any. */
  readonly comment: string
}

/** Every mapping key of the example, with the comment on its line; list items add `[]` to the path. */
const exampleKeys = (): ReadonlyArray<ExampleKey> => {
  const doc = parseDocument(fs.readFileSync(path.join(repo, "docs/svc.example.yaml"), "utf8"))
  const out: Array<ExampleKey> = []
  const walk = (node: unknown, at: ReadonlyArray<string>) => {
    if (isMap(node)) {
      for (const pair of node.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key)
        const value = pair.value as Node | null
        const comments = [
          isScalar(pair.key) ? pair.key.comment : undefined,
          value?.commentBefore,
          isScalar(value) ? value.comment : undefined
        ]
        out.push({ path: [...at, key], comment: comments.filter((c) => c !== undefined && c !== null).join(" ") })
        walk(value, [...at, key])
      }
    } else if (isSeq(node)) {
      for (const item of node.items) walk(item, [...at, "[]"])
    }
  }
  walk(doc.contents, [])
  return out
}

const sourceFiles = (dir: string): ReadonlyArray<string> =>
  fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") && !e.name.endsWith(".d.ts"))
    .map((e) => path.join(e.parentPath, e.name))
    .filter((file) => !file.split(path.sep).includes("testing"))

/** Source text without comments, so a doc comment naming a key is not mistaken for a read. */
const code = (file: string): string =>
  fs
    .readFileSync(file, "utf8")
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/(^|[^:"'`])\/\/.*$/gm, "$1")

const camel = (key: string) => key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** `x.name`, `x?.name`, `x["name"]` and `{ name }` / `{ name: y }` destructuring of a property. */
const accessorOf = (name: string) =>
  new RegExp(
    `(?:\\?\\.|\\.)${escapeRegExp(name)}\\b|\\[["'\`]${escapeRegExp(name)}["'\`]\\]|[{,]\\s*${escapeRegExp(name)}\\s*[,}:]`
  )

/**
 * The segment to look for: the key's own name, or, when that name also belongs to another key of
 * the example (`admin_api.ui.initiate_session_url` vs `host_application.initiate_session_url`),
 * the nearest ancestor whose name is unique.
 */
const distinctiveSegment = (key: ExampleKey, all: ReadonlyArray<ExampleKey>): string => {
  for (let i = key.path.length - 1; i >= 0; i--) {
    const name = key.path[i] ?? ""
    const owners = new Set(
      all.filter((k) => k.path.includes(name)).map((k) => k.path.slice(0, k.path.indexOf(name) + 1).join("."))
    )
    if (name !== "[]" && owners.size === 1) return name
  }
  return key.path.join(".")
}

/** The schema node at `keyPath`, or undefined when the schema has no such key. */
const schemaAt = (ast: SchemaAST.AST, keyPath: ReadonlyArray<string>): SchemaAST.AST | "open" | undefined => {
  if (keyPath.length === 0) return ast
  const [head = "", ...rest] = keyPath
  switch (ast._tag) {
    case "Objects": {
      const property = ast.propertySignatures.find((p) => p.name === head)
      if (property !== undefined) return schemaAt(property.type, rest)
      // A record (`labels`, `attributes`, `headers`): any key is allowed, its contents are values.
      return ast.indexSignatures.length > 0 ? "open" : undefined
    }
    case "Arrays": {
      if (head !== "[]") return undefined
      for (const element of [...ast.elements, ...ast.rest]) {
        const found = schemaAt(element, rest)
        if (found !== undefined) return found
      }
      return undefined
    }
    case "Union": {
      for (const member of ast.types) {
        const found = schemaAt(member, keyPath)
        if (found !== undefined) return found
      }
      return undefined
    }
    default:
      return undefined
  }
}

describe("docs/svc.example.yaml", () => {
  const keys = exampleKeys()
  const marked = keys.filter((k) => notActedOn.test(k.comment))
  const markedUnder = (k: ExampleKey) =>
    marked.some((m) => m.path.length < k.path.length && m.path.every((p, i) => k.path[i] === p))

  it("marks exactly the keys docs/configuration.md lists as not acted on", () => {
    const configuration = fs.readFileSync(path.join(repo, "docs/configuration.md"), "utf8")
    const section = configuration.slice(configuration.indexOf("## Accepted but not yet acted on"))
    expect(section.startsWith("## Accepted but not yet acted on")).toBe(true)
    const listed = [...section.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]).sort()
    expect(marked.map((k) => k.path.join(".")).sort()).toEqual(listed)
  })

  it("every key marked 'not acted on yet' is read by no server code outside the configuration loader", () => {
    const files = sourceFiles(serverSrc)
    const outside = files.filter((f) => !f.startsWith(configDir + path.sep))
    const loader = code(path.join(configDir, "ConfigLoader.ts"))
    const readers: Array<string> = []
    for (const key of marked) {
      const segment = distinctiveSegment(key, keys)
      const names = [...new Set([segment, camel(segment)])]
      for (const name of names) {
        const accessor = accessorOf(name)
        for (const file of outside) {
          if (accessor.test(code(file)))
            readers.push(`${key.path.join(".")}: ${path.relative(repo, file)} reads .${name}`)
        }
        // The loader may only carry the value into the resolved configuration under the same name
        // (so a reader anywhere else is caught above), never turn it into something else.
        for (const line of loader.split("\n")) {
          if (!accessor.test(line)) continue
          if (!new RegExp(`^\\s*${escapeRegExp(name)}:`).test(line)) {
            readers.push(`${key.path.join(".")}: ConfigLoader.ts uses .${name}: ${line.trim()}`)
          }
        }
      }
    }
    expect(readers).toEqual([])
  })

  it("every key not marked as not acted on is a key of the configuration schema", () => {
    const unknown = keys
      .filter((k) => !notActedOn.test(k.comment) && !markedUnder(k))
      .filter((k) => schemaAt(ConfigFile.ast, k.path) === undefined)
      .map((k) => k.path.join("."))
    expect(unknown).toEqual([])
  })

  it("every marked key is a key of the configuration schema too (accepted, validated, unread)", () => {
    expect(marked.filter((k) => schemaAt(ConfigFile.ast, k.path) === undefined).map((k) => k.path.join("."))).toEqual(
      []
    )
  })
})

const markdownFiles = (): ReadonlyArray<string> => [
  path.join(repo, "README.md"),
  ...fs
    .readdirSync(path.join(repo, "docs"), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".md"))
    .map((e) => path.join(e.parentPath, e.name))
]

/** Relative targets of a markdown file: `[text](target)` links and backticked repository paths. */
const relativeTargets = (file: string): ReadonlyArray<{ readonly text: string; readonly resolved: string }> => {
  const text = fs.readFileSync(file, "utf8")
  const out: Array<{ text: string; resolved: string }> = []
  for (const match of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = match[1] ?? ""
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("#")) continue
    const withoutAnchor = decodeURIComponent(target.split("#")[0] ?? "")
    out.push({ text: target, resolved: path.resolve(path.dirname(file), withoutAnchor) })
  }
  // Paths quoted in backticks: repository-rooted (`packages/…`, `docs/…`, `test/…`) or relative
  // to the file (`../…`). `./…` names the working directory of a running svc, not the repository.
  for (const match of text.matchAll(/`((?:packages|docs|test)\/[^`\s]*|\.\.\/[^`\s]*)`/g)) {
    const target = match[1] ?? ""
    const literal = target.split("*")[0] ?? target
    const base = target.startsWith("../") ? path.dirname(file) : repo
    out.push({ text: target, resolved: path.resolve(base, literal) })
  }
  return out
}

describe("relative links of README.md and docs/", () => {
  it("finds links to check", () => {
    expect(markdownFiles().flatMap(relativeTargets).length).toBeGreaterThan(10)
  })

  it("every relative link resolves to an existing file or folder inside the repository", () => {
    const broken: Array<string> = []
    for (const file of markdownFiles()) {
      for (const { text, resolved } of relativeTargets(file)) {
        const where = path.relative(repo, file)
        const inside = resolved === repo || resolved.startsWith(repo + path.sep)
        if (!inside) broken.push(`${where}: ${text} is outside the repository`)
        else if (!fs.existsSync(resolved)) broken.push(`${where}: ${text} does not exist`)
      }
    }
    expect(broken).toEqual([])
  })
})
