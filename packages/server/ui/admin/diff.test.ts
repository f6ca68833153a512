/** The definition diff: kept, removed and added lines in order. */
import { describe, expect, it } from "vitest"
import { canonicalText, diffLines } from "./diff.ts"

describe("diffLines", () => {
  it("marks removed and added lines and keeps the common ones", () => {
    expect(diffLines("a\nb\nc", "a\nx\nc\nd")).toEqual([
      { kind: "same", text: "a" },
      { kind: "remove", text: "b" },
      { kind: "add", text: "x" },
      { kind: "same", text: "c" },
      { kind: "add", text: "d" }
    ])
    expect(diffLines("", "a")).toEqual([{ kind: "add", text: "a" }])
    expect(diffLines("a", "a").every((line) => line.kind === "same")).toBe(true)
  })

  it("compares definitions by content, not key order", () => {
    const before = canonicalText({ type: "x", probes: [{ url: "u", id: "p" }] })
    const after = canonicalText({ probes: [{ id: "p", url: "u" }], type: "x" })
    expect(diffLines(before, after).every((line) => line.kind === "same")).toBe(true)
    const changed = diffLines(canonicalText({ type: "x", n: 1 }), canonicalText({ type: "x", n: 2 }))
    expect(changed.filter((line) => line.kind !== "same")).toEqual([
      { kind: "remove", text: '  "n": 1,' },
      { kind: "add", text: '  "n": 2,' }
    ])
  })
})
