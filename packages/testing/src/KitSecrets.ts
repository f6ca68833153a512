/**
 * The signing key pair and the admin-api certificate of the kit's svc, made once per process and
 * written into each start's data directory before svc starts (docs/testing.md "Start-up time"):
 * svc finds them there as it finds its own from an earlier start (`EmbeddedSecrets.ts`), so no
 * start but the first waits for an RSA key. The key pair is generated off the main thread
 * (`crypto.generateKeyPair`), beginning when the kit is imported.
 */
import { perProcess } from "@svc/sql/PgliteOpen"
import { generateKeyPair } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"

/** PEM files: a private key and its public key or certificate. */
interface Pems {
  readonly key: string
  readonly public: string
}

/** The key pair, one per process (on `globalThis`: shared by copies of the kit evaluated anew in the process). */

/** Starts generating this process's RS256 key pair (2048 bits, as svc's own), once. */
export const prepareSigningKey = (): Promise<Pems | undefined> => {
  const signingKey = perProcess(
    "@svc/testing.signingKey",
    () =>
      new Promise<Pems | undefined>((resolve) =>
        generateKeyPair(
          "rsa",
          {
            modulusLength: 2048,
            publicKeyEncoding: { type: "spki", format: "pem" },
            privateKeyEncoding: { type: "pkcs8", format: "pem" }
          },
          // A failure leaves the key to svc (it generates one itself).
          (error, publicKey, privateKey) => resolve(error === null ? { key: privateKey, public: publicKey } : undefined)
        )
      )
  )
  return signingKey
}

/** The admin-api certificate svc made at the process's first `adminApi: true` start. */
let certificate: Pems | undefined

/** Writes a secret as svc does: owner-only file in an owner-only directory. */
const writeSecret = async (file: string, contents: string) => {
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 })
  await fs.writeFile(file, contents, { mode: 0o600, flag: "wx" })
}

const exists = (file: string) =>
  fs.stat(file).then(
    () => true,
    () => false
  )

/** Writes the process's key pair at svc's generated-key paths, unless a file of the pair is there already (svc's then). */
export const writeSigningKey = async (paths: { readonly privateKeyPath: string; readonly publicKeyPath: string }) => {
  const pems = await prepareSigningKey()
  if (pems === undefined || (await exists(paths.privateKeyPath)) || (await exists(paths.publicKeyPath))) return
  await writeSecret(paths.privateKeyPath, pems.key)
  await writeSecret(paths.publicKeyPath, pems.public)
}

/** Writes the certificate of an earlier start of the process at svc's self-signed paths, if there was one and none is there. */
export const writeCertificate = async (paths: { readonly certPath: string; readonly keyPath: string }) => {
  if (certificate === undefined || (await exists(paths.certPath)) || (await exists(paths.keyPath))) return
  await writeSecret(paths.keyPath, certificate.key)
  await writeSecret(paths.certPath, certificate.public)
}

/** Keeps the certificate svc made, for the process's next `adminApi: true` start. */
export const keepCertificate = async (paths: { readonly certPath: string; readonly keyPath: string }) => {
  certificate ??= { key: await fs.readFile(paths.keyPath, "utf8"), public: await fs.readFile(paths.certPath, "utf8") }
}
