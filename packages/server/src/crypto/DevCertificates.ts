/**
 * `svc certs`: a development CA and one certificate signed by it for the runner transport's
 * mutual TLS (docs/cluster.md). The certificate serves both ends (server and client auth), with
 * SANs for 127.0.0.1, ::1, localhost and the given hosts. The CA's private key is not kept: the
 * set is replaced as a whole (run again into a new directory), never extended.
 */
import { Effect, Schema } from "effect"
import * as fs from "node:fs/promises"
import { isIP } from "node:net"
import * as path from "node:path"
import { generate } from "selfsigned"

/** The files `svc certs` writes into its output directory. */
export const certificateFiles = { ca: "ca.pem", cert: "runner.pem", key: "runner-key.pem" } as const

/** The certificates could not be written (an existing file, an unwritable directory). */
export class CertificatesNotWritten extends Schema.TaggedError<CertificatesNotWritten>()("CertificatesNotWritten", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message() {
    return this.reason === "EEXIST"
      ? `${this.path} exists; choose an empty --out directory (svc certs never replaces a certificate)`
      : `cannot write ${this.path}: ${this.reason}`
  }
}

const validityMs = 825 * 24 * 3600 * 1000

const subjectAltNames = (hosts: ReadonlyArray<string>) => {
  const names = [...new Set(["127.0.0.1", "::1", "localhost", ...hosts])]
  return names.map((name) => (isIP(name) === 0 ? { type: 2 as const, value: name } : { type: 7 as const, ip: name }))
}

/** PEM text of a fresh development CA, and of a certificate and key it signed for `hosts` (and loopback). */
export const generateCertificates = (hosts: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    const notBeforeDate = new Date()
    const notAfterDate = new Date(notBeforeDate.getTime() + validityMs)
    const ca = await generate([{ name: "commonName", value: "svc development CA" }], {
      keySize: 2048,
      algorithm: "sha256",
      notBeforeDate,
      notAfterDate,
      extensions: [
        { name: "basicConstraints", cA: true, pathLenConstraint: 0, critical: true },
        { name: "keyUsage", keyCertSign: true, cRLSign: true, critical: true }
      ]
    })
    const runner = await generate([{ name: "commonName", value: "svc runner" }], {
      keySize: 2048,
      algorithm: "sha256",
      notBeforeDate,
      notAfterDate,
      ca: { key: ca.private, cert: ca.cert },
      extensions: [
        { name: "basicConstraints", cA: false },
        { name: "keyUsage", digitalSignature: true, keyEncipherment: true, critical: true },
        { name: "extKeyUsage", serverAuth: true, clientAuth: true },
        { name: "subjectAltName", altNames: subjectAltNames(hosts) }
      ]
    })
    return { ca: ca.cert, cert: runner.cert, key: runner.private }
  })

const writeNew = (file: string, contents: string, mode: number) =>
  Effect.tryPromise({
    try: () => fs.writeFile(file, contents, { mode, flag: "wx" }),
    catch: (e) =>
      new CertificatesNotWritten({ path: file, reason: e instanceof Error && "code" in e ? String(e.code) : "error" })
  })

/**
 * Writes `ca.pem`, `runner.pem` and `runner-key.pem` (owner-only) into `dir`, creating it;
 * refuses to replace an existing file. Returns the three paths.
 */
export const writeCertificates = Effect.fn("DevCertificates.writeCertificates")(function* (
  dir: string,
  hosts: ReadonlyArray<string>
) {
  const out = path.resolve(dir)
  yield* Effect.tryPromise({
    try: () => fs.mkdir(out, { recursive: true, mode: 0o700 }),
    catch: (e) =>
      new CertificatesNotWritten({ path: out, reason: e instanceof Error && "code" in e ? String(e.code) : "error" })
  })
  const paths = {
    ca: path.join(out, certificateFiles.ca),
    cert: path.join(out, certificateFiles.cert),
    key: path.join(out, certificateFiles.key)
  }
  for (const file of Object.values(paths)) {
    const exists = yield* Effect.promise(() =>
      fs.stat(file).then(
        () => true,
        () => false
      )
    )
    if (exists) return yield* new CertificatesNotWritten({ path: file, reason: "EEXIST" })
  }
  const pems = yield* generateCertificates(hosts)
  yield* writeNew(paths.key, pems.key, 0o600)
  yield* writeNew(paths.cert, pems.cert, 0o644)
  yield* writeNew(paths.ca, pems.ca, 0o644)
  return paths
})
