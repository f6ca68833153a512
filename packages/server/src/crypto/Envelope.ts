/**
 * Envelope encryption, pure (SECURITY.md "Encryption at rest"): AES-256-GCM with a random 96-bit
 * nonce. Data keys are wrapped by the root key (AAD `svc.datakey.v1|<key_id>|<version>`); values
 * are JSON, encrypted under a data key with AAD binding table, column, row id, namespace and the
 * key version, and written as `v1.<key_id>.<version>.<nonce>.<ciphertext||tag>` (base64url).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto"

/** Bytes of a root key and of a data key (AES-256). */
export const keyLength = 32

const nonceLength = 12
const tagLength = 16

/** Where a ciphertext lives; every part is bound into its authenticated data. */
export interface CipherContext {
  readonly table: string
  readonly column: string
  readonly rowId: string
  readonly namespace: string
}

/** The data key a ciphertext was written under. */
export interface KeyRef {
  readonly keyId: string
  readonly version: number
}

/** Why a ciphertext did not decrypt; never carries key or plaintext material. */
export type DecryptProblem = "malformed" | "authentication failed"

/** The outcome of a decryption. */
export type Decrypted =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly problem: DecryptProblem }

/** Fresh random key material (a root key or a data key). */
export const generateKey = (): Uint8Array => new Uint8Array(randomBytes(keyLength))

/** Stable public id of a root key: the first 16 hex chars of its SHA-256 (detects a wrong root key). */
export const rootKeyId = (rootKey: Uint8Array): string =>
  createHash("sha256").update(rootKey).digest("hex").slice(0, 16)

const keyIdPattern = /^[A-Za-z0-9_-]+$/
// AAD parts are joined with `|`: no part may contain it, or two contexts could share one AAD.
const checkPart = (part: string, what: string) => {
  if (part.includes("|")) throw new Error(`${what} must not contain "|"`)
  return part
}

const seal = (key: Uint8Array, aad: string, plaintext: Uint8Array) => {
  const nonce = randomBytes(nonceLength)
  const cipher = createCipheriv("aes-256-gcm", key, nonce, { authTagLength: tagLength })
  cipher.setAAD(Buffer.from(aad, "utf8"))
  const body = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()])
  return { nonce, body }
}

const open = (key: Uint8Array, aad: string, nonce: Uint8Array, body: Uint8Array): Buffer | undefined => {
  if (nonce.length !== nonceLength || body.length < tagLength || key.length !== keyLength) return undefined
  try {
    const decipher = createDecipheriv("aes-256-gcm", key, nonce, { authTagLength: tagLength })
    decipher.setAAD(Buffer.from(aad, "utf8"))
    decipher.setAuthTag(body.subarray(body.length - tagLength))
    return Buffer.concat([decipher.update(body.subarray(0, body.length - tagLength)), decipher.final()])
  } catch {
    return undefined
  }
}

const dataKeyAad = (ref: KeyRef) => `svc.datakey.v1|${checkPart(ref.keyId, "key id")}|${ref.version}`

/** Wraps a data key under the root key: base64 of nonce || ciphertext || tag. */
export const wrapDataKey = (rootKey: Uint8Array, ref: KeyRef, dataKey: Uint8Array): string => {
  const { nonce, body } = seal(rootKey, dataKeyAad(ref), dataKey)
  return Buffer.concat([nonce, body]).toString("base64")
}

/** The data key inside `wrapped`, or undefined when the root key, key id or version do not match. */
export const unwrapDataKey = (rootKey: Uint8Array, ref: KeyRef, wrapped: string): Uint8Array | undefined => {
  const bytes = Buffer.from(wrapped, "base64")
  const key = open(rootKey, dataKeyAad(ref), bytes.subarray(0, nonceLength), bytes.subarray(nonceLength))
  return key?.length === keyLength ? new Uint8Array(key) : undefined
}

const valueAad = (context: CipherContext, ref: KeyRef) =>
  [
    "svc.v1",
    checkPart(context.table, "table"),
    checkPart(context.column, "column"),
    checkPart(context.rowId, "row id"),
    checkPart(context.namespace, "namespace"),
    checkPart(ref.keyId, "key id"),
    String(ref.version)
  ].join("|")

/** Encrypts the JSON encoding of `value` under `dataKey` (version `ref`) for one row and column. */
export const encrypt = (dataKey: Uint8Array, ref: KeyRef, context: CipherContext, value: unknown): string => {
  if (!keyIdPattern.test(ref.keyId)) throw new Error("invalid key id")
  const plaintext = Buffer.from(JSON.stringify(value) ?? "null", "utf8")
  const { nonce, body } = seal(dataKey, valueAad(context, ref), plaintext)
  return `v1.${ref.keyId}.${ref.version}.${nonce.toString("base64url")}.${body.toString("base64url")}`
}

const base64url = /^[A-Za-z0-9_-]+$/

/** The key and version a ciphertext names in its header, or undefined when it is not one of ours. */
export const headerOf = (ciphertext: string): KeyRef | undefined => {
  const parts = ciphertext.split(".")
  if (parts.length !== 5 || parts[0] !== "v1") return undefined
  const [, keyId = "", version = "", nonce = "", body = ""] = parts
  if (!keyIdPattern.test(keyId) || !/^[1-9][0-9]{0,8}$/.test(version)) return undefined
  if (!base64url.test(nonce) || !base64url.test(body)) return undefined
  return { keyId, version: Number(version) }
}

/** Decrypts a ciphertext written by `encrypt` for the same context under `dataKey`. */
export const decrypt = (dataKey: Uint8Array, context: CipherContext, ciphertext: string): Decrypted => {
  const ref = headerOf(ciphertext)
  if (ref === undefined) return { ok: false, problem: "malformed" }
  const [, , , nonce = "", body = ""] = ciphertext.split(".")
  const plaintext = open(
    dataKey,
    valueAad(context, ref),
    Buffer.from(nonce, "base64url"),
    Buffer.from(body, "base64url")
  )
  if (plaintext === undefined) return { ok: false, problem: "authentication failed" }
  try {
    return { ok: true, value: JSON.parse(plaintext.toString("utf8")) as unknown }
  } catch {
    return { ok: false, problem: "malformed" }
  }
}
