import { createPublicKey } from "node:crypto"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { type CryptoKey, decodeProtectedHeader, errors, type JWTPayload, jwtVerify } from "jose"
import { type ServiceId, TokenClaims } from "@svc/domain/Auth"
import type { StoreUnavailable } from "../stores/CounterStore.ts"
import { NonceStore } from "../stores/NonceStore.ts"

/** Why a bearer token was refused; HTTP-free, the auth middleware maps it to 401. */
export const TokenRejectionReason = Schema.Literals([
  "malformed",
  "bad_signature",
  "algorithm_not_allowed",
  "expired",
  "not_yet_valid",
  "audience",
  "nonce_replayed",
  "nonce_without_exp",
  "claims_invalid"
])
export type TokenRejectionReason = typeof TokenRejectionReason.Type

/** The token did not verify; `reason` says which check refused it. */
export class TokenRejected extends Schema.TaggedError<TokenRejected>()("TokenRejected", {
  reason: TokenRejectionReason
}) {}

/** The configured verification key cannot be used (wrong type, too weak, unparsable). */
export class InvalidSigningKey extends Schema.TaggedError<InvalidSigningKey>()("InvalidSigningKey", {
  message: Schema.String
}) {}

/** Verification key configuration (spec 5.3); the algorithm is pinned to the key type. */
export type TokenVerifierConfig =
  | { readonly algorithm: "RS256"; readonly publicKeyPem: string }
  | { readonly algorithm: "HS256"; readonly secret: Uint8Array }

/** A token whose signature, times, audience, claims and nonce all checked out. */
export interface VerifiedToken {
  readonly claims: TokenClaims
  readonly algorithm: TokenVerifierConfig["algorithm"]
}

/** Longest accepted token; anything longer is `malformed` without any crypto work. */
export const maxTokenLength = 16 * 1024

/** `exp`/`nbf` leeway (SECURITY.md: at most 60 s). */
export const clockToleranceSeconds = 60

/** Verified tokens whose signature check is remembered, and the longest token remembered. */
const maxCachedTokens = 2048
const maxCachedTokenLength = 4096

const minHmacSecretBytes = 32
const minRsaModulusBits = 2048

const importKey = (config: TokenVerifierConfig): Effect.Effect<CryptoKey, InvalidSigningKey> =>
  Effect.tryPromise({
    try: async () => {
      if (config.algorithm === "HS256") {
        if (config.secret.byteLength < minHmacSecretBytes) {
          throw new Error(`an HS256 secret needs at least ${minHmacSecretBytes} bytes`)
        }
        return crypto.subtle.importKey("raw", new Uint8Array(config.secret), { name: "HMAC", hash: "SHA-256" }, false, [
          "verify"
        ])
      }
      // Accepts SPKI, PKCS#1 and X.509 PEM; a private key yields its public half.
      const key = createPublicKey(config.publicKeyPem)
      if (key.asymmetricKeyType !== "rsa") throw new Error(`an RS256 key must be RSA, got ${key.asymmetricKeyType}`)
      const bits = key.asymmetricKeyDetails?.modulusLength ?? 0
      if (bits < minRsaModulusBits)
        throw new Error(`an RS256 key needs at least ${minRsaModulusBits} bits, got ${bits}`)
      return key.toCryptoKey({ name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, false, ["verify"])
    },
    catch: (cause) =>
      new InvalidSigningKey({ message: cause instanceof Error ? cause.message : "unusable verification key" })
  })

const rejected = (reason: TokenRejectionReason) => new TokenRejected({ reason })

const fromJoseError = (cause: unknown): TokenRejected => {
  if (cause instanceof errors.JOSEAlgNotAllowed) return rejected("algorithm_not_allowed")
  if (cause instanceof errors.JWSSignatureVerificationFailed) return rejected("bad_signature")
  if (cause instanceof errors.JWTExpired) return rejected("expired")
  if (cause instanceof errors.JWTClaimValidationFailed) {
    return rejected(cause.claim === "nbf" && cause.reason === "check_failed" ? "not_yet_valid" : "claims_invalid")
  }
  return rejected("malformed")
}

const headerAlgorithm = (token: string): string | undefined => {
  try {
    const alg = decodeProtectedHeader(token).alg
    return typeof alg === "string" ? alg : undefined
  } catch {
    return undefined
  }
}

// spec 5.2: no `aud` means every service; otherwise it must name this one.
const audienceAllows = (aud: unknown, service: ServiceId): boolean =>
  aud === undefined || aud === service || (Array.isArray(aud) && aud.includes(service))

const decodeClaims = Schema.decodeUnknownOption(TokenClaims)

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const controlCharacter = /[\u0000-\u001f\u007f]/

/**
 * True when every string of the decoded claims (sub, jti, namespace, nonce, permissions) is free
 * of control characters and NUL and is valid Unicode: such a claim names no actor, namespace or
 * nonce, and must be refused (401) before it reaches a store.
 */
export const claimsPrintable = (value: unknown): boolean => {
  if (typeof value === "string") return !controlCharacter.test(value) && value.isWellFormed()
  if (Array.isArray(value)) return value.every(claimsPrintable)
  if (typeof value === "object" && value !== null) return Object.values(value).every(claimsPrintable)
  return true
}

/**
 * Verifies actor JWTs for one configured key (SECURITY.md "Authentication"): the algorithm is
 * pinned (RS256 key → RS256 only, HS256 secret → HS256 only, never `none`), the key comes only
 * from configuration, `exp`/`nbf` get 60 s leeway, `exp` is optional unless a nonce is present,
 * and a nonce is claimed only after everything else verified.
 */
export class TokenVerifier extends Context.Service<
  TokenVerifier,
  {
    verify(token: string, service: ServiceId): Effect.Effect<VerifiedToken, TokenRejected | StoreUnavailable>
  }
>()("@svc/server/auth/TokenVerifier") {
  /** Imports the key once at build; fails with `InvalidSigningKey` when it is unusable. */
  static readonly layerNoDeps = (
    config: TokenVerifierConfig
  ): Layer.Layer<TokenVerifier, InvalidSigningKey, NonceStore> =>
    Layer.effect(
      TokenVerifier,
      Effect.gen(function* () {
        const nonces = yield* NonceStore
        const key = yield* importKey(config)
        const algorithm = config.algorithm
        const algorithms = [algorithm]
        // Signature checks of recently seen tokens, by exact text (a hit skips only the signature
        // check: times, audience, claims and the nonce are checked on every use).
        const verifiedSignatures = new Map<string, JWTPayload>()

        const verify = Effect.fnUntraced(function* (
          token: string,
          service: ServiceId
        ): Effect.fn.Return<VerifiedToken, TokenRejected | StoreUnavailable> {
          if (token.length === 0 || token.length > maxTokenLength) return yield* rejected("malformed")
          const alg = headerAlgorithm(token)
          if (alg === undefined) return yield* rejected("malformed")
          if (alg !== algorithm) return yield* rejected("algorithm_not_allowed")
          const now = yield* Clock.currentTimeMillis
          let payload = verifiedSignatures.get(token)
          if (payload === undefined) {
            payload = (yield* Effect.tryPromise({
              try: () =>
                jwtVerify(token, key, {
                  algorithms,
                  clockTolerance: clockToleranceSeconds,
                  currentDate: new Date(now)
                }),
              catch: fromJoseError
            })).payload
            if (token.length <= maxCachedTokenLength) {
              if (verifiedSignatures.size >= maxCachedTokens) {
                verifiedSignatures.delete(verifiedSignatures.keys().next().value as string)
              }
              verifiedSignatures.set(token, payload)
            }
          } else {
            // The signature of this exact text verified before; the time checks are redone.
            const seconds = Math.floor(now / 1000)
            if (typeof payload.exp === "number" && payload.exp <= seconds - clockToleranceSeconds) {
              verifiedSignatures.delete(token)
              return yield* rejected("expired")
            }
            if (typeof payload.nbf === "number" && payload.nbf > seconds + clockToleranceSeconds) {
              return yield* rejected("not_yet_valid")
            }
          }
          if (!audienceAllows(payload.aud, service)) return yield* rejected("audience")
          const decoded = decodeClaims(payload)
          if (Option.isNone(decoded) || decoded.value.sub === "" || !claimsPrintable(decoded.value)) {
            return yield* rejected("claims_invalid")
          }
          const claims = decoded.value
          // SECURITY.md: the nonce is consumed only after signature and claims verified.
          if (claims.nonce !== undefined) {
            if (claims.exp === undefined) return yield* rejected("nonce_without_exp")
            if (!(yield* nonces.claim(claims.nonce, claims.exp))) return yield* rejected("nonce_replayed")
          }
          return { claims, algorithm }
        })

        return TokenVerifier.of({ verify })
      })
    )
}
