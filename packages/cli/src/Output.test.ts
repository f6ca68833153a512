import { assert, describe, it } from "@effect/vitest"
import { formatJsonArray, formatJsonLines, formatTable, shortTime } from "./Output.ts"

interface Row {
  readonly id: string
  readonly name: string
  readonly state: string
}

const columns = [
  { header: "ID", value: (row: Row) => row.id },
  { header: "NAME", value: (row: Row) => row.name },
  { header: "STATE", value: (row: Row) => row.state }
]

describe("formatTable", () => {
  it("aligns every column to its widest cell, two spaces apart, without trailing spaces", () => {
    const lines = formatTable(columns, [
      { id: "cxr_1", name: "a", state: "primary" },
      { id: "cxr_22222", name: "longer-name", state: "draft" }
    ])
    assert.deepStrictEqual(lines, [
      "ID         NAME         STATE",
      "cxr_1      a            primary",
      "cxr_22222  longer-name  draft"
    ])
  })

  it("prints only the header for no rows", () => {
    assert.deepStrictEqual(formatTable(columns, []), ["ID  NAME  STATE"])
  })

  it("cuts cells longer than the maximum width with an ellipsis", () => {
    const lines = formatTable(columns, [{ id: "x".repeat(20), name: "n", state: "s" }], 8)
    assert.deepStrictEqual(lines, ["ID        NAME  STATE", "xxxxxxx…  n     s"])
  })

  it("turns control characters into spaces so a row stays one line", () => {
    const lines = formatTable(columns, [{ id: "a\nb", name: "\u001b[31mred", state: "s\tt" }])
    assert.strictEqual(lines.length, 2)
    assert.strictEqual(lines[1], "a b   [31mred  s t")
  })
})

describe("JSON output", () => {
  it("json is one indented array, jsonl one compact object per line", () => {
    const items = [{ id: "a", n: 1 }, { id: "b" }]
    assert.strictEqual(formatJsonArray(items), '[\n  {\n    "id": "a",\n    "n": 1\n  },\n  {\n    "id": "b"\n  }\n]')
    assert.deepStrictEqual(formatJsonLines(items), ['{"id":"a","n":1}', '{"id":"b"}'])
    assert.strictEqual(formatJsonArray([]), "[]")
  })
})

describe("shortTime", () => {
  it("shows an ISO timestamp to the second, other text unchanged", () => {
    assert.strictEqual(shortTime("2026-11-24T05:50:01.123Z"), "2026-11-24 05:50:01")
    assert.strictEqual(shortTime("yesterday"), "yesterday")
  })
})
