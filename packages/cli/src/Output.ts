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

/** No column is narrowed below this many characters (or its header, if shorter) to fit a terminal. */
export const minCellWidth = 6

/**
 * Narrows `widths` until the line (columns two spaces apart) fits `lineWidth`: the widest
 * column loses a character at a time, none below `minCellWidth` or its own natural width. A
 * terminal too narrow for every column at its minimum gets the minimums (the lines wrap).
 */
export const fitWidths = (widths: ReadonlyArray<number>, lineWidth: number): Array<number> => {
  const fitted = [...widths]
  const floors = widths.map((width) => Math.min(width, minCellWidth))
  let total = fitted.reduce((sum, width) => sum + width, 0) + 2 * Math.max(0, fitted.length - 1)
  while (total > lineWidth) {
    let widest = -1
    for (let i = 0; i < fitted.length; i++) {
      if ((fitted[i] ?? 0) > (floors[i] ?? 0) && (widest === -1 || (fitted[i] ?? 0) > (fitted[widest] ?? 0))) widest = i
    }
    if (widest === -1) break
    fitted[widest] = (fitted[widest] ?? 0) - 1
    total -= 1
  }
  return fitted
}

/** Table layout: the longest cell (`maxWidth`) and the terminal's width, when known. */
export interface TableOptions {
  readonly maxWidth?: number | undefined
  readonly lineWidth?: number | undefined
}

/**
 * Aligned columns, header first: cells padded to the widest in their column (at most
 * `maxWidth`, longer ones cut with `…`), two spaces between columns, no trailing spaces. With a
 * `lineWidth` (the terminal's columns) the widest columns are narrowed until a line fits.
 */
export const formatTable = <A>(
  columns: ReadonlyArray<Column<A>>,
  rows: ReadonlyArray<A>,
  options: TableOptions = {}
): Array<string> => {
  const maxWidth = options.maxWidth ?? maxCellWidth
  const cells = [columns.map((column) => column.header), ...rows.map((row) => columns.map((c) => clean(c.value(row))))]
  const natural = columns.map((_, i) => Math.min(maxWidth, Math.max(...cells.map((line) => (line[i] ?? "").length))))
  const widths = options.lineWidth === undefined ? natural : fitWidths(natural, options.lineWidth)
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

/**
 * The width tables fit on stdout: the terminal's columns when stdout is a terminal, else a
 * positive `COLUMNS` (the environment's, read by the caller), else none (a pipe or file gets whole
 * cells).
 */
export const terminalWidth = (
  stdout: { readonly isTTY?: boolean | undefined; readonly columns?: number | undefined },
  columns: string | undefined
): number | undefined => {
  if (stdout.isTTY === true && stdout.columns !== undefined && stdout.columns > 0) return stdout.columns
  const fromEnv = Number(columns)
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : undefined
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
