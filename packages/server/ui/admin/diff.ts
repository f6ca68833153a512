/** A line diff (longest common subsequence) for the definition diff view before publishing. */

/** One line of a diff: kept, added in the new text, or removed from the old. */
export interface DiffLine {
  readonly kind: "same" | "add" | "remove"
  readonly text: string
}

/** The lines of `before` and `after` as kept, removed and added lines, in order. */
export const diffLines = (before: string, after: string): ReadonlyArray<DiffLine> => {
  const a = before === "" ? [] : before.split("\n")
  const b = after === "" ? [] : after.split("\n")
  // lengths[i][j]: the longest common subsequence of a[i..] and b[j..].
  const lengths: Array<Array<number>> = Array.from({ length: a.length + 1 }, () =>
    new Array<number>(b.length + 1).fill(0)
  )
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lengths[i]![j] = a[i] === b[j] ? lengths[i + 1]![j + 1]! + 1 : Math.max(lengths[i + 1]![j]!, lengths[i]![j + 1]!)
    }
  }
  const out: Array<DiffLine> = []
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      out.push({ kind: "same", text: a[i]! })
      i++
      j++
    } else if (lengths[i + 1]![j]! >= lengths[i]![j + 1]!) out.push({ kind: "remove", text: a[i++]! })
    else out.push({ kind: "add", text: b[j++]! })
  }
  while (i < a.length) out.push({ kind: "remove", text: a[i++]! })
  while (j < b.length) out.push({ kind: "add", text: b[j++]! })
  return out
}

/** A definition as the text the diff compares: JSON with two-space indentation and sorted keys. */
export const canonicalText = (value: unknown): string => JSON.stringify(sortKeys(value), null, 2)

const sortKeys = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(sortKeys)
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])])
    )
  }
  return value
}
