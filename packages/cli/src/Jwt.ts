/**
 * Signing and verifying actor JWTs with jose, the algorithm always pinned to the key
 * (SECURITY "Authentication": RS256 keys only RS256, HS256 secrets only HS256, never `none`).
 */
import { Effect, Result, Schema } from "effect"
import { TokenClaims } from "@svc/domain/Auth"
import { decodeProtectedHeader, errors, jwtVerify, SignJWT } from "jose"
import type { JWTPayload, JWTHeaderParameters } from "jose"
import { CliFailure } from "./CliFailure.ts"
import type { PinnedKey } from "./Keys.ts"
import { formatSchemaError } from "./SchemaIssues.ts"

/** Clock skew tolerated on `exp`/`nbf`, matching the server's leeway. */
export const clockToleranceSeconds = 60

const reason = (error: unknown) => (error instanceof Error ? error.message : String(error))

const headerAlg = (token: string): string => {
  try {
    return String(decodeProtectedHeader(token).alg)
  } catch {
    return "an unknown algorithm"
  }
}

const rejection = (error: unknown, token: string, alg: PinnedKey["alg"]): string =>
  error instanceof errors.JOSEAlgNotAllowed
    ? `token rejected: it is signed with ${headerAlg(token)} but the key only verifies ${alg}`
    : error instanceof errors.JWTExpired
      ? `token rejected: expired (${reason(error)})`
      : `token rejected: ${reason(error)}`

/** Signs `claims` as a compact JWS with header `{ alg, typ: "JWT" }`. */
export const signToken = (claims: TokenClaims, signing: PinnedKey): Effect.Effect<string, CliFailure> => {
  const { aud, ...rest } = claims
  const payload: JWTPayload =
    aud === undefined ? { ...rest } : { ...rest, aud: typeof aud === "string" ? aud : [...aud] }
  return Effect.tryPromise({
    try: () => new SignJWT(payload).setProtectedHeader({ alg: signing.alg, typ: "JWT" }).sign(signing.key),
    catch: (error) => new CliFailure({ message: `signing failed: ${reason(error)}` })
  })
}

/** A verified token: its protected header and its claims as signed. */
export interface VerifiedToken {
  readonly header: JWTHeaderParameters
  readonly claims: JWTPayload
}

const decodeClaims = Schema.decodeUnknownResult(TokenClaims)

/**
 * Verifies a compact JWT against `verifying` (only its algorithm is allowed), checks `exp`/`nbf`
 * at `nowMillis` with `clockToleranceSeconds`, and requires the claims to have the svc shape.
 */
export const verifyToken = Effect.fnUntraced(function* (token: string, verifying: PinnedKey, nowMillis: number) {
  const result = yield* Effect.tryPromise({
    try: () =>
      jwtVerify(token, verifying.key, {
        algorithms: [verifying.alg],
        clockTolerance: clockToleranceSeconds,
        currentDate: new Date(nowMillis)
      }),
    catch: (error) => new CliFailure({ message: rejection(error, token, verifying.alg) })
  })
  const decoded = decodeClaims(result.payload, { errors: "all" })
  if (Result.isFailure(decoded)) {
    return yield* new CliFailure({
      message:
        "token rejected: the signature is valid but the claims are not svc token claims:\n  " +
        formatSchemaError(decoded.failure, "\n  ")
    })
  }
  return { header: result.protectedHeader, claims: result.payload } satisfies VerifiedToken
})
