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
import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { isMap, isScalar, isSeq, type Node, parseDocument } from "yaml"
import { startLocalServer } from "@svc/server/outbound/testing/LocalServer"
import { launch } from "./support/Api.ts"
import type { Ports } from "./support/SvcProcess.ts"

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

/** Languages of a fenced block that is a shell script. */
const shellLanguages = new Set(["sh", "bash", "shell", "zsh", "console"])

/** One fenced shell block of a markdown file: where it is, how it is marked, its script. */
interface ShellBlock {
  readonly file: string
  readonly line: number
  readonly mark: "runnable" | "illustrative" | undefined
  readonly script: string
}

/**
 * Every fenced shell block (CONTRIBUTING.md "Shell blocks in the docs"): the info string's first
 * word is the language, `runnable` or `illustrative` after it is the mark. The fence's own
 * indentation (a block inside a list item) is removed from the script's lines.
 */
const shellBlocks = (file: string): ReadonlyArray<ShellBlock> => {
  const lines = fs.readFileSync(file, "utf8").split("\n")
  const blocks: Array<ShellBlock> = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})(\S*)(.*)$/.exec(lines[i] ?? "")
    if (open === null) continue
    const [, indent = "", fence = "", language = "", rest = ""] = open
    const body: Array<string> = []
    const start = i
    for (i++; i < lines.length && !new RegExp(`^\\s*${fence}\\s*$`).test(lines[i] ?? ""); i++) {
      const line = lines[i] ?? ""
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart())
    }
    if (!shellLanguages.has(language)) continue
    const words = rest.trim().split(/\s+/)
    const mark = words.includes("runnable") ? "runnable" : words.includes("illustrative") ? "illustrative" : undefined
    blocks.push({ file, line: start + 1, mark, script: `${body.join("\n")}\n` })
  }
  return blocks
}

const allShellBlocks = () => markdownFiles().flatMap(shellBlocks)
const where = (block: ShellBlock) => `${path.relative(repo, block.file)}:${block.line}`

describe("shell blocks of README.md and docs/", () => {
  it("finds runnable and illustrative blocks", () => {
    const blocks = allShellBlocks()
    expect(blocks.filter((b) => b.mark === "runnable").length).toBeGreaterThan(3)
    expect(blocks.filter((b) => b.mark === "illustrative").length).toBeGreaterThan(3)
  })

  it("every shell block is marked runnable or illustrative", () => {
    expect(
      allShellBlocks()
        .filter((b) => b.mark === undefined)
        .map(where)
    ).toEqual([])
  })

  it("every shell block is valid shell syntax (bash -n)", () => {
    const invalid: Array<string> = []
    for (const block of allShellBlocks()) {
      const check = spawnSync("bash", ["-n"], { input: block.script, encoding: "utf8" })
      if (check.status !== 0) invalid.push(`${where(block)}: ${check.stderr.trim()}`)
    }
    expect(invalid).toEqual([])
  })

  it("the syntax check catches a broken block", () => {
    expect(spawnSync("bash", ["-n"], { input: "curl -d '{\n", encoding: "utf8" }).status).not.toBe(0)
  })
})

/**
 * `curl` inside a runnable block: silent but for errors, the body printed, and the answer's status
 * checked — 2xx, or exactly the status the line's trailing comment states (`# 401 {...}`).
 */
const curlWrapper = `
svc_doc_curl() {
  local out status
  out=$(mktemp)
  status=$(command curl -sS -o "$out" -w '%{http_code}' "$@") || { cat "$out"; rm -f "$out"; return 1; }
  cat "$out"; echo; rm -f "$out"
  local expected="\${SVC_DOC_EXPECT:-2xx}"
  if [[ "$expected" == 2xx && "$status" != 2* ]] || [[ "$expected" != 2xx && "$status" != "$expected" ]]; then
    echo "curl $*: HTTP $status, expected $expected" >&2
    return 1
  fi
}
curl() { svc_doc_curl "$@"; }
`

/**
 * A runnable block as it runs against a test's svc: the default ports become the test's, and a
 * command whose last line ends in `# <status>` expects that status (`SVC_DOC_EXPECT`).
 */
const runnableScript = (script: string, ports: Ports): string => {
  const lines = script
    .replaceAll(/(127\.0\.0\.1|localhost):8081\b/g, `127.0.0.1:${ports.api}`)
    .replaceAll(/(127\.0\.0\.1|localhost):8082\b/g, `127.0.0.1:${ports.adminApi}`)
    .replaceAll(/(127\.0\.0\.1|localhost):8080\b/g, `127.0.0.1:${ports.public}`)
    .split("\n")
  const out: Array<string> = []
  for (let i = 0; i < lines.length; i++) {
    const command = [lines[i] ?? ""]
    while ((command[command.length - 1] ?? "").trimEnd().endsWith("\\") && i + 1 < lines.length) {
      command.push(lines[++i] ?? "")
    }
    const status = /#\s*([1-5]\d\d)\b/.exec(command[command.length - 1] ?? "")?.[1]
    if (status !== undefined && /^\s*curl\b/.test(command[0] ?? "")) {
      command[0] = (command[0] ?? "").replace(/^(\s*)curl\b/, `$1SVC_DOC_EXPECT=${status} curl`)
    }
    out.push(...command)
  }
  return out.join("\n")
}

describe("runnable shell blocks run against a running svc", () => {
  const byFile = new Map<string, Array<ShellBlock>>()
  for (const block of allShellBlocks().filter((b) => b.mark === "runnable")) {
    byFile.set(block.file, [...(byFile.get(block.file) ?? []), block])
  }

  it("the tools the runnable blocks use are installed (bash, curl, jq: Debian packages)", () => {
    for (const tool of ["bash", "curl", "jq"]) {
      expect(spawnSync(tool, ["--version"], { encoding: "utf8" }).status, `${tool} is not installed`).toBe(0)
    }
  })

  it("the status check rewrites only a curl command whose last line states a status", () => {
    const ports = { api: 1, adminApi: 2, public: 3, worker: 4, runner: 5, metrics: 6 }
    expect(runnableScript("curl http://127.0.0.1:8081/x   # 401 {}\ncurl -k https://localhost:8082/y\n", ports)).toBe(
      "SVC_DOC_EXPECT=401 curl http://127.0.0.1:1/x   # 401 {}\ncurl -k https://127.0.0.1:2/y\n"
    )
    expect(runnableScript("curl -X POST \\\n  http://127.0.0.1:8081/z   # 204\n", ports)).toBe(
      "SVC_DOC_EXPECT=204 curl -X POST \\\n  http://127.0.0.1:1/z   # 204\n"
    )
  })

  it("a curl answered with another status than the block states fails the block", async () => {
    const server = await startLocalServer((request, response) => {
      response.statusCode = request.url === "/missing" ? 404 : 200
      response.end("{}")
    })
    try {
      // Asynchronously: the server answering curl runs on this process's event loop.
      const run = (line: string) =>
        new Promise<number | null>((resolve) =>
          spawn("bash", ["-c", `set -euo pipefail\n${curlWrapper}\n${line}`], { stdio: "ignore" }).once("exit", resolve)
        )
      expect(await run(`curl ${server.origin}/ok`)).toBe(0)
      expect(await run(`curl ${server.origin}/missing`)).not.toBe(0)
      expect(await run(`SVC_DOC_EXPECT=404 curl ${server.origin}/missing`)).toBe(0)
      expect(await run(`SVC_DOC_EXPECT=401 curl ${server.origin}/ok`)).not.toBe(0)
    } finally {
      await server.close()
    }
  })

  for (const [file, blocks] of byFile) {
    it(`${path.relative(repo, file)}: ${blocks.length} block(s)`, async () => {
      const svc = await launch("svc-docs-")
      try {
        // One bash session per file, blocks in order: a block may use what an earlier one set (T, J, ids).
        const script = [
          "set -euo pipefail",
          curlWrapper,
          ...blocks.map((b) => `echo '--- ${where(b)}' >&2\n${runnableScript(b.script, svc.ports)}`)
        ].join("\n")
        const result = spawnSync("bash", ["-c", script], {
          cwd: svc.dir,
          encoding: "utf8",
          timeout: 120_000,
          maxBuffer: 64 * 1024 * 1024,
          env: {
            ...process.env,
            TOKEN: svc.adminToken,
            PATH: `${path.join(repo, "node_modules/.bin")}:${process.env.PATH}`
          }
        })
        // stderr names the block and the failed call; the bodies printed on stdout are only the tail.
        expect(result.status, `${result.error ?? ""}\n${result.stderr}\n…${result.stdout.slice(-2000)}`).toBe(0)
      } finally {
        await svc.stop()
      }
    }, 180_000)
  }
})
