import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import { createPrivateKey, X509Certificate } from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { writeCertificates } from "./DevCertificates.ts"

const serverAuth = "1.3.6.1.5.5.7.3.1"
const clientAuth = "1.3.6.1.5.5.7.3.2"

describe("svc certs (DevCertificates)", () => {
  it.effect(
    "writes a CA and a server+client certificate for loopback and the given hosts; never overwrites",
    () =>
      Effect.acquireUseRelease(
        Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-certs-"))),
        (dir) =>
          Effect.gen(function* () {
            const out = path.join(dir, "certs")
            const paths = yield* writeCertificates(out, ["worker-a.internal", "10.0.0.7"])
            assert.deepStrictEqual(paths, {
              ca: path.join(out, "ca.pem"),
              cert: path.join(out, "runner.pem"),
              key: path.join(out, "runner-key.pem")
            })
            const read = (file: string) => Effect.promise(() => fs.readFile(file, "utf8"))
            const ca = new X509Certificate(yield* read(paths.ca))
            const cert = new X509Certificate(yield* read(paths.cert))
            assert.isTrue(ca.ca)
            assert.isFalse(cert.ca)
            assert.isTrue(cert.checkIssued(ca))
            assert.isTrue(cert.verify(ca.publicKey))
            assert.deepStrictEqual([...(cert.keyUsage ?? [])].sort(), [serverAuth, clientAuth])
            for (const ip of ["127.0.0.1", "::1", "10.0.0.7"]) assert.strictEqual(cert.checkIP(ip), ip)
            for (const host of ["localhost", "worker-a.internal"]) assert.strictEqual(cert.checkHost(host), host)
            assert.isUndefined(cert.checkHost("worker-b.internal"))
            assert.isTrue(cert.checkPrivateKey(createPrivateKey(yield* read(paths.key))))
            assert.strictEqual((yield* Effect.promise(() => fs.stat(paths.key))).mode & 0o777, 0o600)

            const again = yield* Effect.exit(writeCertificates(out, []))
            assert.isTrue(Exit.isFailure(again))
            if (Exit.isFailure(again)) {
              const error = again.cause.reasons.find((r) => r._tag === "Fail")
              assert.strictEqual(
                error?._tag === "Fail" ? error.error.message : undefined,
                `${paths.ca} exists; choose an empty --out directory (svc certs never replaces a certificate)`
              )
            }
            // The refused run left the first set as it was.
            assert.isTrue(new X509Certificate(yield* read(paths.cert)).checkIssued(ca))
          }),
        (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
      ),
    { timeout: 60_000 }
  )
})
