/**
 * The `ops` system actor of the production-shape workspaces (black-box tests and the bench): an
 * HS256 shared secret and an encryption root key written into a directory, the configuration
 * lines that point svc at them and declare `ops` with every permission, and `ops` tokens.
 */
import { randomBytes } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { SignJWT } from "jose"

/** The lines of `svc.yaml` that use the files `writeOpsKeys` wrote and declare the `ops` actor. */
export const opsConfigLines: ReadonlyArray<string> = [
  "encryption: { root_key: { path: root.key } }",
  "system_auth:",
  "  jwt_signing_key: { private_key: { path: hs256.secret } }",
  "  actors:",
  "    - external_id: ops",
  "      permissions: [{ namespace: 'root.**', resources: ['*'], verbs: ['*'] }]"
]

/** Writes `hs256.secret` and `root.key` (mode 0600) into `dir`; answers the HS256 secret. */
export const writeOpsKeys = async (dir: string): Promise<Uint8Array> => {
  const secret = randomBytes(48)
  await fs.writeFile(path.join(dir, "hs256.secret"), secret, { mode: 0o600 })
  await fs.writeFile(path.join(dir, "root.key"), randomBytes(32).toString("base64"), { mode: 0o600 })
  return secret
}

/** A token of the `ops` actor signed with `secret`, valid `expiresIn`. */
export const opsToken = (secret: Uint8Array, expiresIn = "1h"): Promise<string> =>
  new SignJWT({})
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject("ops")
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(secret)
