/**
 * The short-lived admin token the CLI signs for each request it makes or forwards (README
 * "Tokens"): `sub`, `iat`, a fresh `jti`, `exp` 5 minutes later, no `aud`, no restrictions.
 */
import { Clock, Effect } from "effect"
import { buildClaims } from "./Claims.ts"
import { signToken } from "./Jwt.ts"
import { loadSigningKey } from "./Keys.ts"
import type { KeyRef } from "./SignPlan.ts"
import { TokenId } from "./TokenId.ts"

/** Lifetime of the admin token signed for each request: 5 minutes. */
export const requestTokenSeconds = 300

/**
 * Loads `key` once and answers an effect that signs a fresh token for `subject` each time it
 * runs (a signing failure of a loaded key is a defect).
 */
export const makeRequestTokenSigner = Effect.fn("RequestToken.makeSigner")(function* (subject: string, key: KeyRef) {
  const signing = yield* loadSigningKey(key)
  const tokenIds = yield* TokenId
  return Effect.gen(function* () {
    const now = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const claims = buildClaims({
      subject,
      issuedAt: now,
      jti: yield* tokenIds.next,
      expiresInSeconds: requestTokenSeconds,
      apis: undefined,
      permissions: undefined
    })
    return yield* signToken(claims, signing)
  }).pipe(Effect.orDie)
})
