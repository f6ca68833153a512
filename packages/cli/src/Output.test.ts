import { assert, describe, it } from "@effect/vitest"
import { fitWidths, formatJsonArray, formatJsonLines, formatTable, shortTime, terminalWidth } from "./Output.ts"

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
    const lines = formatTable(columns, [{ id: "x".repeat(20), name: "n", state: "s" }], { maxWidth: 8 })
    assert.deepStrictEqual(lines, ["ID        NAME  STATE", "xxxxxxx…  n     s"])
  })

  it("turns control characters into spaces so a row stays one line", () => {
    const lines = formatTable(columns, [{ id: "a\nb", name: "\u001b[31mred", state: "s\tt" }])
    assert.strictEqual(lines.length, 2)
    assert.strictEqual(lines[1], "a b   [31mred  s t")
  })
})

describe("fitting a terminal", () => {
  const rows = [
    { id: "cxn_01jd8x7k2m3n4p5q6r7s8t9v0w", name: "a-rather-long-connection-name-for-acme", state: "configured" },
    { id: "cxn_2", name: "short", state: "disconnected" }
  ]

  it("narrows the widest column until every line fits the terminal", () => {
    const lines = formatTable(columns, rows, { lineWidth: 60 })
    for (const line of lines) assert.isAtMost(line.length, 60)
    assert.strictEqual(lines[0]?.startsWith("ID"), true)
    // the state column keeps its natural width: the long ones gave way first
    assert.strictEqual(lines[2]?.endsWith("disconnected"), true)
    assert.strictEqual(lines[1]?.includes("…"), true)
  })

  it("leaves a table that already fits unchanged", () => {
    assert.deepStrictEqual(formatTable(columns, rows, { lineWidth: 500 }), formatTable(columns, rows))
  })

  it("never narrows a column below its minimum: a tiny terminal wraps instead", () => {
    assert.deepStrictEqual(fitWidths([30, 40, 3], 5), [6, 6, 3])
    assert.deepStrictEqual(fitWidths([10, 10], 22), [10, 10])
    assert.deepStrictEqual(fitWidths([10, 10], 21), [9, 10])
  })

  it("takes the width from a terminal, else from COLUMNS, else none", () => {
    assert.strictEqual(terminalWidth({ isTTY: true, columns: 101 }, "80"), 101)
    assert.strictEqual(terminalWidth({ isTTY: false }, "80"), 80)
    assert.strictEqual(terminalWidth({ isTTY: false }, "wide"), undefined)
    assert.strictEqual(terminalWidth({ isTTY: false }, undefined), undefined)
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
