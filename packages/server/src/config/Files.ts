/** Files the configuration names (key material, certificates), read with a clear error. */
import { Effect, Schema } from "effect"
import * as fs from "node:fs/promises"

/** A file the configuration names could not be read. */
export class UnreadableFile extends Schema.TaggedError<UnreadableFile>()("UnreadableFile", {
  purpose: Schema.String,
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot read the ${this.purpose} at ${this.path}: ${this.reason}`
  }
}

/** The bytes of `file`; fails with the purpose, the path and the system's error code (never contents). */
export const readFile = (purpose: string, file: string) =>
  Effect.tryPromise({
    try: () => fs.readFile(file),
    catch: (e) =>
      new UnreadableFile({ purpose, path: file, reason: e instanceof Error && "code" in e ? String(e.code) : "error" })
  })
