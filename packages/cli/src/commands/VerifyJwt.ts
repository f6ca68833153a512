/**
 * `cli verify-jwt` (spec 4.8): verifies a token read on standard input and prints its header and
 * claims as JSON.
 */
import { Clock, Console, Effect, Option, Stdio, Stream } from "effect"
import { CliError, Command, Flag } from "effect/cli"
import { devKeyRelativePath, loadCliConfig } from "../CliConfig.ts"
import type { LoadedConfig } from "../CliConfig.ts"
import { CliFailure } from "../CliFailure.ts"
import { verifyToken } from "../Jwt.ts"
import { loadVerifyKey } from "../Keys.ts"
import type { VerifyKeyRef } from "../Keys.ts"
import { root } from "../Root.ts"

/** The flags of `verify-jwt`. */
export const verifyJwtFlags = {
  publicKeyPath: Flag.String("publicKeyPath").pipe(
    Flag.withMetavar("PATH"),
    Flag.withDescription(
      "Verify RS256 with this PEM SPKI public key (default: public half of config admin_private_key_path)"
    ),
    Flag.optional
  ),
  secretKeyPath: Flag.String("secretKeyPath").pipe(
    Flag.withMetavar("PATH"),
    Flag.withDescription(
      "Verify HS256 with this shared secret file, every byte is the secret (default: config admin_shared_key_path)"
    ),
    Flag.optional
  )
}

/** Usage errors of the `verify-jwt` flags; empty when valid. */
export const verifyJwtFlagErrors = (flags: {
  readonly publicKeyPath: Option.Option<string>
  readonly secretKeyPath: Option.Option<string>
}): ReadonlyArray<string> =>
  Option.isSome(flags.publicKeyPath) && Option.isSome(flags.secretKeyPath)
    ? ["--publicKeyPath and --secretKeyPath are mutually exclusive"]
    : []

/**
 * Chooses the verification key: a flag wins, else the config's private key (RS256) or shared key
 * (HS256), else the embedded default's development key in the working directory.
 */
export const resolveVerifyKey = (
  flags: { readonly publicKeyPath: Option.Option<string>; readonly secretKeyPath: Option.Option<string> },
  loaded: LoadedConfig
): Effect.Effect<VerifyKeyRef, CliFailure> => {
  if (Option.isSome(flags.publicKeyPath)) {
    return Effect.succeed({ alg: "RS256", kind: "public", path: flags.publicKeyPath.value })
  }
  if (Option.isSome(flags.secretKeyPath)) return Effect.succeed({ alg: "HS256", path: flags.secretKeyPath.value })
  const { admin_private_key_path: privatePath, admin_shared_key_path: sharedPath } = loaded.config
  if (privatePath !== undefined && sharedPath !== undefined) {
    return Effect.fail(
      new CliFailure({
        message:
          "the config sets both admin_private_key_path and admin_shared_key_path; " +
          "choose one with --publicKeyPath or --secretKeyPath"
      })
    )
  }
  if (privatePath !== undefined) return Effect.succeed({ alg: "RS256", kind: "private", path: privatePath })
  if (sharedPath !== undefined) return Effect.succeed({ alg: "HS256", path: sharedPath })
  if (loaded.devKeyPath !== undefined) return Effect.succeed({ alg: "RS256", kind: "private", path: loaded.devKeyPath })
  return Effect.fail(
    new CliFailure({
      message:
        "no verification key: pass --publicKeyPath <pem> or --secretKeyPath <file>, or set " +
        "admin_private_key_path or admin_shared_key_path in the config file, or run in the directory of an " +
        `embedded svc (./${devKeyRelativePath})`
    })
  )
}

const readToken = Effect.gen(function* () {
  const stdio = yield* Stdio.Stdio
  const text = yield* stdio.stdin.pipe(
    Stream.decodeText,
    Stream.mkString,
    Effect.mapError((error) => new CliFailure({ message: `cannot read standard input: ${error.message}` }))
  )
  const token = text.trim()
  if (token === "") return yield* new CliFailure({ message: "no token on standard input" })
  return token
})

/** `verify-jwt`: verifies the token on stdin with a pinned algorithm and prints `{ header, claims }`. */
export const verifyJwt = Command.make(
  "verify-jwt",
  verifyJwtFlags,
  Effect.fn("VerifyJwt")(function* (flags) {
    const { config } = yield* root
    const loaded = yield* loadCliConfig(config)
    const ref = yield* resolveVerifyKey(flags, loaded)
    const verifying = yield* loadVerifyKey(ref)
    const token = yield* readToken
    const nowMillis = yield* Clock.currentTimeMillis
    const verified = yield* verifyToken(token, verifying, nowMillis)
    yield* Console.log(JSON.stringify(verified, null, 2))
  })
).pipe(
  Command.validate((flags) => {
    const errors = verifyJwtFlagErrors(flags)
    return errors.length === 0
      ? Effect.void
      : Effect.fail(new CliError.ValidationError({ message: errors.join("\n  ") }))
  }),
  Command.withDescription(
    "Verify a JWT read on standard input and print its header and claims as JSON (exit 1 if invalid)"
  ),
  Command.withExamples([
    { command: "cli sign-jwt --admin | cli verify-jwt", description: "Check a token with the configured key" },
    { command: "cli verify-jwt --publicKeyPath public.pem < token.txt", description: "Verify RS256 with a public key" }
  ])
)
