/**
 * Rendering of command results on stdout (spec 4.8 `--output json|jsonl|table`): a JSON array, one
 * JSON object per line, or aligned columns fit for a terminal.
 */
import { Schema } from "effect"
import { Flag } from "effect/cli"

/** The `--output` formats of the list commands. */
export const OutputFormat = Schema.Literals(["json", "jsonl", "table"])
export type OutputFormat = typeof OutputFormat.Type

/** `--output/-o json|jsonl|table` with a default. */
export const outputFlag = <const F extends ReadonlyArray<OutputFormat>>(formats: F, fallback: F[number]) =>
  Flag.Literals("output", formats).pipe(
    Flag.withAlias("o"),
    Flag.withDescription(
      `Output format: ${formats.join(", ")} (default ${fallback}); table is aligned columns, jsonl one object per line`
    ),
    Flag.withDefault(fallback)
  )

/** One column of a table: its header and how a row fills it. */
export interface Column<A> {
  readonly header: string
  readonly value: (row: A) => string
}

/** Longest cell before it is cut with `…`, so one long label cannot push the rest off screen. */
export const maxCellWidth = 48

/** Control characters (a newline in a name, an escape sequence in a label) become spaces. */
const clean = (text: string): string =>
  Array.from(text, (char) => {
    const code = char.charCodeAt(0)
    return code < 0x20 || code === 0x7f ? " " : char
  }).join("")

const cut = (text: string, width: number): string =>
  text.length <= width ? text : `${text.slice(0, Math.max(0, width - 1))}…`

/**
 * Aligned columns, header first: cells padded to the widest in their column (at most
 * `maxWidth`, longer ones cut with `…`), two spaces between columns, no trailing spaces.
 */
export const formatTable = <A>(
  columns: ReadonlyArray<Column<A>>,
  rows: ReadonlyArray<A>,
  maxWidth = maxCellWidth
): Array<string> => {
  const cells = [columns.map((column) => column.header), ...rows.map((row) => columns.map((c) => clean(c.value(row))))]
  const widths = columns.map((_, i) => Math.min(maxWidth, Math.max(...cells.map((line) => (line[i] ?? "").length))))
  return cells.map((line) =>
    line
      .map((cell, i) => {
        const width = widths[i] ?? 0
        const text = cut(cell, width)
        return i === line.length - 1 ? text : text.padEnd(width)
      })
      .join("  ")
      .trimEnd()
  )
}

/** The whole result as one indented JSON array. */
export const formatJsonArray = (items: ReadonlyArray<unknown>): string => JSON.stringify(items, null, 2)

/** One compact JSON object per line. */
export const formatJsonLines = (items: ReadonlyArray<unknown>): Array<string> =>
  items.map((item) => JSON.stringify(item))

/** `2026-11-24T05:50:01.123Z` as `2026-11-24 05:50:01` (UTC; tables only, JSON keeps the full value). */
export const shortTime = (iso: string): string => {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})/.exec(iso)
  return match === null ? iso : `${match[1]} ${match[2]}`
}
