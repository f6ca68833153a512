/**
 * Loads the encryption root key from its configured source (a file, an environment variable, a
 * value, or the embedded default's generated file): base64 of exactly 32 bytes. Errors name the
 * source, never the key.
 */
import { Config, Effect, Redacted, Schema } from "effect"
import * as fs from "node:fs/promises"
import type { RootKeySource } from "../config/SvcConfig.ts"
import { ensureRootKey } from "./EmbeddedSecrets.ts"
import { keyLength } from "./Envelope.ts"

/** The configured root key cannot be read or is not base64 of 32 bytes. */
export class RootKeyUnusable extends Schema.TaggedError<RootKeyUnusable>()("RootKeyUnusable", {
  source: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return `cannot use the encryption root key from ${this.source}: ${this.reason}`
  }
}

/** How a source is named in messages. */
export const describeSource = (source: RootKeySource): string => {
  switch (source.source) {
    case "file":
      return `the file ${source.path} (encryption.root_key.path)`
    case "env":
      return `the environment variable ${source.name} (encryption.root_key.env)`
    case "value":
      return "encryption.root_key.value"
    case "generated":
      return `the generated file ${source.path}`
  }
}

const base64 = /^[A-Za-z0-9+/]+={0,2}$|^[A-Za-z0-9_-]+$/

/** The 32 key bytes encoded in `text` (surrounding whitespace ignored), or why it is not a key. */
export const decodeRootKey = (text: string): { readonly key: Uint8Array } | { readonly problem: string } => {
  const trimmed = text.trim()
  if (trimmed === "") return { problem: "it is empty" }
  if (!base64.test(trimmed)) return { problem: "it is not base64" }
  const bytes = Buffer.from(trimmed, trimmed.includes("-") || trimmed.includes("_") ? "base64url" : "base64")
  if (bytes.length !== keyLength) {
    return { problem: `it decodes to ${bytes.length} bytes; ${keyLength} are required (e.g. openssl rand -base64 32)` }
  }
  return { key: new Uint8Array(bytes) }
}

const readText = (file: string, source: string) =>
  Effect.tryPromise({
    try: () => fs.readFile(file, "utf8"),
    catch: (e) =>
      new RootKeyUnusable({
        source,
        reason: `cannot read it (${e instanceof Error && "code" in e ? String(e.code) : "error"})`
      })
  })

const ownerOnly = (file: string) =>
  Effect.promise(() =>
    fs.stat(file).then(
      (stat) => (stat.mode & 0o077) === 0,
      () => true
    )
  )

/** The root key bytes; generates the embedded default's key file on first start. */
export const loadRootKey = Effect.fn("RootKey.loadRootKey")(function* (source: RootKeySource) {
  const name = describeSource(source)
  let text: string
  switch (source.source) {
    case "value":
      text = Redacted.value(source.value)
      break
    case "env":
      text = yield* Config.String(source.name).pipe(
        Effect.mapError(() => new RootKeyUnusable({ source: name, reason: "it is not set" }))
      )
      break
    case "generated":
      if (
        yield* ensureRootKey(source.path).pipe(
          Effect.catchDefect(() => new RootKeyUnusable({ source: name, reason: "cannot create it" }))
        )
      ) {
        yield* Effect.logWarning(
          `generated an encryption root key at ${source.path}: back it up, every stored secret depends on it`
        )
      }
      text = yield* readText(source.path, name)
      break
    case "file":
      text = yield* readText(source.path, name)
      if (!(yield* ownerOnly(source.path))) {
        yield* Effect.logWarning(`the encryption root key file ${source.path} is readable by others: chmod 600 it`)
      }
      break
  }
  const decoded = decodeRootKey(text)
  if ("problem" in decoded) return yield* new RootKeyUnusable({ source: name, reason: decoded.problem })
  return decoded.key
})
