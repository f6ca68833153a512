/**
 * Material the embedded default creates on first start and keeps in the data directory: the
 * development JWT signing key pair, the self-signed admin-api TLS certificate and the encryption
 * root key. Files are written owner-only (0600) and never regenerated while present.
 */
import { Effect } from "effect"
import { exportPKCS8, exportSPKI, generateKeyPair } from "jose"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"

const fileExists = (file: string) =>
  Effect.promise(() =>
    fs.stat(file).then(
      () => true,
      () => false
    )
  )

const writeSecret = (file: string, contents: string) =>
  Effect.promise(async () => {
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 })
    await fs.writeFile(file, contents, { mode: 0o600 })
  })

/** Ensures the development RS256 key pair exists; returns whether it was created now. */
export const ensureDevSigningKey = Effect.fn("EmbeddedSecrets.ensureDevSigningKey")(function* (paths: {
  readonly privateKeyPath: string
  readonly publicKeyPath: string
}) {
  if ((yield* fileExists(paths.privateKeyPath)) && (yield* fileExists(paths.publicKeyPath))) return false
  const { privateKey, publicKey } = yield* Effect.promise(() =>
    generateKeyPair("RS256", { modulusLength: 2048, extractable: true })
  )
  yield* writeSecret(paths.privateKeyPath, yield* Effect.promise(() => exportPKCS8(privateKey)))
  yield* writeSecret(paths.publicKeyPath, yield* Effect.promise(() => exportSPKI(publicKey)))
  return true
})

/** Ensures a self-signed certificate for localhost exists; returns whether it was created now. */
export const ensureSelfSignedCertificate = Effect.fn("EmbeddedSecrets.ensureSelfSignedCertificate")(function* (paths: {
  readonly certPath: string
  readonly keyPath: string
}) {
  if ((yield* fileExists(paths.certPath)) && (yield* fileExists(paths.keyPath))) return false
  const notBeforeDate = new Date()
  const notAfterDate = new Date(notBeforeDate.getTime() + 825 * 24 * 3600 * 1000)
  // selfsigned (and its X.509 stack) is loaded only when a certificate is made: the first start
  const { generate: generateCertificate } = yield* Effect.promise(() => import("selfsigned"))
  const pems = yield* Effect.promise(() =>
    generateCertificate([{ name: "commonName", value: "localhost" }], {
      keySize: 2048,
      algorithm: "sha256",
      notBeforeDate,
      notAfterDate,
      extensions: [
        { name: "basicConstraints", cA: false },
        { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
        { name: "extKeyUsage", serverAuth: true },
        {
          name: "subjectAltName",
          altNames: [
            { type: 2, value: "localhost" },
            { type: 7, ip: "127.0.0.1" },
            { type: 7, ip: "::1" }
          ]
        }
      ]
    })
  )
  yield* writeSecret(paths.keyPath, pems.private)
  yield* writeSecret(paths.certPath, pems.cert)
  return true
})

/**
 * Ensures the embedded encryption root key (base64 of 32 random bytes) exists; returns whether it
 * was created now. Created exclusively, so a concurrent start never replaces a key in use.
 */
export const ensureRootKey = Effect.fn("EmbeddedSecrets.ensureRootKey")(function* (file: string) {
  if (yield* fileExists(file)) return false
  return yield* Effect.promise(async () => {
    await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 })
    return fs.writeFile(file, `${randomBytes(32).toString("base64")}\n`, { mode: 0o600, flag: "wx" }).then(
      () => true,
      (error: unknown) => {
        if (error instanceof Error && "code" in error && error.code === "EEXIST") return false
        throw error
      }
    )
  })
})
