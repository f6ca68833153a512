/**
 * Where the configuration's secrets come from (SECURITY.md): the JWT signing key, the encryption
 * root key and OAuth2 client secrets — a path, an environment variable or an inline value, never
 * read here (they are read when used) and never logged.
 */
import { Redacted } from "effect"
import * as path from "node:path"
import type { ConfigFile } from "./ConfigSchema.ts"
import type { ClientSecretSource, ResolvedDatabase, RootKeySource, SigningKey } from "./SvcConfig.ts"

export const resolveSigningKey = (
  file: ConfigFile,
  base: string,
  dataDir: string,
  problems: Array<string>
): SigningKey => {
  const key = file.system_auth?.jwt_signing_key
  if (key?.public_key !== undefined && key.private_key !== undefined) {
    problems.push(
      "system_auth.jwt_signing_key: set exactly one of public_key.path (RS256) or private_key.path (HS256 shared secret)"
    )
  }
  if (key?.public_key !== undefined)
    return { algorithm: "RS256", publicKeyPath: path.resolve(base, key.public_key.path) }
  if (key?.private_key !== undefined)
    return { algorithm: "HS256", secretPath: path.resolve(base, key.private_key.path) }
  const dir = path.join(dataDir, "dev-keys")
  return {
    algorithm: "RS256",
    generated: { privateKeyPath: path.join(dir, "jwt-private.pem"), publicKeyPath: path.join(dir, "jwt-public.pem") }
  }
}

// SECURITY.md "Encryption at rest": production (PostgreSQL) refuses to run without a durable root key.
export const resolveRootKey = (
  file: ConfigFile,
  base: string,
  dataDir: string,
  database: ResolvedDatabase,
  problems: Array<string>
): RootKeySource => {
  const key = file.encryption?.root_key
  if (key !== undefined) {
    if ([key.path, key.env, key.value].filter((v) => v !== undefined).length !== 1) {
      problems.push("encryption.root_key: set exactly one of path, env or value")
    }
    if (key.path !== undefined) return { source: "file", path: path.resolve(base, key.path) }
    if (key.env !== undefined) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key.env)) {
        problems.push("encryption.root_key.env: must be an environment variable name")
      }
      return { source: "env", name: key.env }
    }
    if (key.value !== undefined) return { source: "value", value: Redacted.make(key.value) }
  }
  if (database.provider === "postgres") {
    problems.push(
      "encryption.root_key: is required when the database is PostgreSQL (production refuses to run without a durable root key)"
    )
  }
  return { source: "generated", path: path.join(dataDir, "root.key") }
}

export const resolveClientSecrets = (
  file: ConfigFile,
  base: string,
  problems: Array<string>
): ReadonlyMap<string, ClientSecretSource> => {
  const out = new Map<string, ClientSecretSource>()
  for (const [index, client] of (file.oauth2?.clients ?? []).entries()) {
    const at = `oauth2.clients[${index}]`
    const secret = client.client_secret
    if ([secret.path, secret.env, secret.value].filter((v) => v !== undefined).length !== 1) {
      problems.push(`${at}.client_secret: set exactly one of path, env or value`)
    }
    if (out.has(client.client_id)) problems.push(`${at}.client_id: ${client.client_id} is configured twice`)
    if (secret.env !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(secret.env)) {
      problems.push(`${at}.client_secret.env: must be an environment variable name`)
    }
    const source: ClientSecretSource | undefined =
      secret.path !== undefined
        ? { source: "file", path: path.resolve(base, secret.path) }
        : secret.env !== undefined
          ? { source: "env", name: secret.env }
          : secret.value !== undefined
            ? { source: "value", value: Redacted.make(secret.value) }
            : undefined
    if (source !== undefined) out.set(client.client_id, source)
  }
  return out
}
