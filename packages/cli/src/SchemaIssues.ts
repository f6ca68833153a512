import type { Schema } from "effect"
import { SchemaIssue } from "effect"

const toStandard = SchemaIssue.makeFormatterStandardSchemaV1()

const renderPath = (path: ReadonlyArray<unknown>): string => {
  let text = ""
  for (const segment of path) {
    const key = typeof segment === "object" && segment !== null && "key" in segment ? segment.key : segment
    text += typeof key === "number" ? `[${key}]` : `${text === "" ? "" : "."}${String(key)}`
  }
  return text
}

/** Renders a decoding failure as one `key.path: problem` line per issue, naming unknown keys. */
export const formatSchemaError = (error: Schema.SchemaError, separator = "\n"): string =>
  toStandard(error.issue)
    .issues.map((issue) => {
      const message = issue.message === "Expected no excess property" ? "unknown key" : issue.message
      const path = renderPath(issue.path ?? [])
      return path === "" ? message : `${path}: ${message}`
    })
    .join(separator)
