/**
 * PKCE (RFC 7636) with the S256 method, and random URL-safe tokens (OAuth `state`, nonces), from
 * node:crypto's CSPRNG.
 */
import { createHash, randomBytes } from "node:crypto"

/** A PKCE pair: the secret `verifier` kept server-side and the `challenge` sent to the authorize endpoint. */
export interface Pkce {
  readonly verifier: string
  readonly challenge: string
}

/** `bytes` random bytes, base64url without padding (32 bytes → 43 characters). */
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString("base64url")

/** The S256 code challenge of a verifier: base64url(SHA-256(ASCII(verifier))) (RFC 7636 4.2). */
export const pkceChallenge = (verifier: string): string =>
  createHash("sha256").update(verifier, "ascii").digest("base64url")

/** A fresh PKCE pair: a 43-character verifier from 32 random bytes (RFC 7636 4.1) and its S256 challenge. */
export const makePkce = (): Pkce => {
  const verifier = randomToken(32)
  return { verifier, challenge: pkceChallenge(verifier) }
}
