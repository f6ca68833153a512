/**
 * "spec N.N" in the documentation resolves: every such reference in README.md, docs/ and the
 * packages' READMEs is a link to `docs/spec-reference.md` (the specification, shipped), and every
 * link into that page names a heading it has.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const repo = path.resolve(import.meta.dirname, "..")
const reference = path.join(repo, "docs/spec-reference.md")

const markdownFiles = (): ReadonlyArray<string> => [
  path.join(repo, "README.md"),
  ...fs
    .readdirSync(path.join(repo, "docs"), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".md"))
    .map((e) => path.join(e.parentPath, e.name)),
  ...fs
    .readdirSync(path.join(repo, "packages"), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => path.join(repo, "packages", e.name, "README.md"))
    .filter((file) => fs.existsSync(file))
]

/** GitHub's anchor of a heading: lower case, punctuation other than `-` and `_` dropped, spaces to `-`. */
const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, "")
    .replace(/ /g, "-")

/** The text of a file outside fenced code blocks, line by line. */
const proseLines = (file: string): ReadonlyArray<{ readonly line: number; readonly text: string }> => {
  let fenced = false
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .flatMap((text, i) => {
      if (text.trimStart().startsWith("```")) {
        fenced = !fenced
        return []
      }
      return fenced ? [] : [{ line: i + 1, text }]
    })
}

describe("spec references", () => {
  const anchors = new Set(
    [...fs.readFileSync(reference, "utf8").matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1] ?? ""))
  )

  it("the reference has the specification's sections", () => {
    for (const anchor of ["25-per-request-label-snapshot", "5-authentication", "7-errors", "83-telemetry"]) {
      expect(anchors.has(anchor), anchor).toBe(true)
    }
  })

  it("every spec N.N is a link into docs/spec-reference.md, and every such link names a heading", () => {
    const problems: Array<string> = []
    let links = 0
    for (const file of markdownFiles()) {
      if (file === reference) continue
      const where = path.relative(repo, file)
      for (const { line, text } of proseLines(file)) {
        // A bare reference: "spec 2.5" not inside a link text and not quoted in backticks.
        for (const m of text.matchAll(/(?<![[\w`])[Ss]pec(?: section)? \d+(?:\.\d+)?/g)) {
          problems.push(`${where}:${line}: "${m[0]}" is not a link to docs/spec-reference.md`)
        }
        for (const m of text.matchAll(/\]\(([^)\s]*spec-reference\.md)(?:#([^)\s]*))?\)/g)) {
          links++
          const target = path.resolve(path.dirname(file), m[1] ?? "")
          if (target !== reference) problems.push(`${where}:${line}: ${m[1]} is not docs/spec-reference.md`)
          if (m[2] !== undefined && !anchors.has(m[2])) problems.push(`${where}:${line}: no heading #${m[2]}`)
        }
      }
    }
    expect(problems).toEqual([])
    expect(links).toBeGreaterThan(60)
  })
})
