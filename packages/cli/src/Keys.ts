/**
 * Loading JWT keys from files with the algorithm pinned to the key type (SECURITY "Authentication"):
 * RS256 keys are PEM (PKCS#8 private, SPKI public); an HS256 secret is the file's raw bytes.
 */
import { Effect } from "effect"
import { Flag } from "effect/cli"
import { importPKCS8, importSPKI } from "jose"
import type { CryptoKey, KeyObject } from "jose"
import { createPublicKey } from "node:crypto"
import { devKeyRelativePath } from "./CliConfig.ts"
import { CliFailure } from "./CliFailure.ts"
import { readBytes, readText } from "./Files.ts"

/** RFC 7518 3.2: an HS256 key must be at least as long as the hash output (32 bytes). */
export const minSecretBytes = 32

/** A key ready for jose, with the only algorithm it may be used with. */
export interface PinnedKey {
  readonly alg: "RS256" | "HS256"
  readonly key: CryptoKey | KeyObject | Uint8Array
}

/** Which file verifies a token: an RS256 public key, the public half of an RS256 private key, or an HS256 secret. */
export type VerifyKeyRef =
  | { readonly alg: "RS256"; readonly kind: "public" | "private"; readonly path: string }
  | { readonly alg: "HS256"; readonly path: string }

const reason = (error: unknown) => (error instanceof Error ? error.message : String(error))

/**
 * Reads an HS256 secret: every byte of the file, trailing newline included (never trimmed), so
 * the server reading the same file derives the same key. Shorter than 32 bytes fails.
 */
export const loadSecret = Effect.fnUntraced(function* (path: string) {
  const bytes = yield* readBytes(path, "HS256 secret file")
  if (bytes.length < minSecretBytes) {
    return yield* new CliFailure({
      message: `HS256 secret file "${path}" holds ${bytes.length} bytes; at least ${minSecretBytes} are required`
    })
  }
  return { alg: "HS256", key: bytes } satisfies PinnedKey
})

/** Reads an RS256 private key (PEM, PKCS#8 `BEGIN PRIVATE KEY`) for signing. */
export const loadPrivateKey = Effect.fnUntraced(function* (path: string) {
  const pem = yield* readText(path, "RS256 private key")
  const key = yield* Effect.tryPromise({
    try: () => importPKCS8(pem, "RS256"),
    catch: (error) =>
      new CliFailure({
        message:
          `"${path}" is not a usable RS256 private key (PEM PKCS#8, "BEGIN PRIVATE KEY"; convert ` +
          `PKCS#1 with "openssl pkcs8 -topk8 -nocrypt"): ${reason(error)}`
      })
  })
  return { alg: "RS256", key } satisfies PinnedKey
})

/** Reads the key that verifies tokens for `ref`. */
export const loadVerifyKey = Effect.fnUntraced(function* (ref: VerifyKeyRef) {
  if (ref.alg === "HS256") return yield* loadSecret(ref.path)
  if (ref.kind === "public") {
    const pem = yield* readText(ref.path, "RS256 public key")
    const key = yield* Effect.tryPromise({
      try: () => importSPKI(pem, "RS256"),
      catch: (error) =>
        new CliFailure({
          message: `"${ref.path}" is not a usable RS256 public key (PEM SPKI, "BEGIN PUBLIC KEY"): ${reason(error)}`
        })
    })
    return { alg: "RS256", key } satisfies PinnedKey
  }
  const pem = yield* readText(ref.path, "RS256 private key")
  const key = yield* Effect.try({
    try: () => createPublicKey(pem),
    catch: (error) => new CliFailure({ message: `"${ref.path}" is not a PEM private key: ${reason(error)}` })
  })
  if (key.asymmetricKeyType !== "rsa") {
    return yield* new CliFailure({ message: `"${ref.path}" is not an RSA key; RS256 needs one` })
  }
  return { alg: "RS256", key } satisfies PinnedKey
})

/** The signing key of a token: an RS256 private key or an HS256 shared secret, by path. */
export const loadSigningKey = (key: { readonly alg: "RS256" | "HS256"; readonly path: string }) =>
  key.alg === "RS256" ? loadPrivateKey(key.path) : loadSecret(key.path)

/** `--privateKeyPath` and `--secretKeyPath`, shared by every command that signs a token. */
export const signingKeyFlags = {
  privateKeyPath: Flag.String("privateKeyPath").pipe(
    Flag.withMetavar("PATH"),
    Flag.withDescription(
      `RS256 private key, PEM PKCS#8 (default: config admin_private_key_path, else ./${devKeyRelativePath} when present)`
    ),
    Flag.optional
  ),
  secretKeyPath: Flag.String("secretKeyPath").pipe(
    Flag.withMetavar("PATH"),
    Flag.withDescription("HS256 shared secret file, every byte is the secret (default: config admin_shared_key_path)"),
    Flag.optional
  )
}
