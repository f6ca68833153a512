/**
 * Authentication of every service (spec 1, SECURITY.md): the configured signing key read once,
 * the token verifier with its nonce store, and the authenticator over the actor directory.
 */
import { Effect, Layer } from "effect"
import { readFile, type UnreadableFile } from "../config/Files.ts"
import type { SigningKey } from "../config/SvcConfig.ts"
import { NonceStore } from "../stores/NonceStore.ts"
import { Authenticator } from "./Authenticator.ts"
import { TokenVerifier, type TokenVerifierConfig } from "./TokenVerifier.ts"

/** The verification half of the configured signing key (public key or shared secret). */
export const readVerificationKey = (signingKey: SigningKey): Effect.Effect<TokenVerifierConfig, UnreadableFile> => {
  if (signingKey.algorithm === "HS256") {
    return Effect.map(readFile("JWT shared secret", signingKey.secretPath), (secret) => ({
      algorithm: "HS256" as const,
      secret: new Uint8Array(secret)
    }))
  }
  const file = "generated" in signingKey ? signingKey.generated.publicKeyPath : signingKey.publicKeyPath
  return Effect.map(readFile("JWT public key", file), (pem) => ({
    algorithm: "RS256" as const,
    publicKeyPem: pem.toString("utf8")
  }))
}

/** `Authenticator` over the given key; needs the actor directory and the counter store. */
export const layerNoDeps = (verifier: TokenVerifierConfig) =>
  Authenticator.layerNoDeps.pipe(
    Layer.provide(TokenVerifier.layerNoDeps(verifier).pipe(Layer.provide(NonceStore.layerNoDeps)))
  )
