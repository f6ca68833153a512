/**
 * Pure resolution of `cli sign-jwt` flags plus configuration into what to sign and with which key
 * (spec 4.8): flag exclusivity, subject, expiry, service allowlist, restrictions and key choice.
 */
import { Option, Result } from "effect"
import type { ServiceId } from "@svc/domain/Auth"
import { dashboardExpirySeconds, defaultExpirySeconds, parseApis } from "./Claims.ts"
import type { DashboardPreset } from "./Claims.ts"
import { devKeyRelativePath, type LoadedConfig } from "./CliConfig.ts"
import { CliFailure } from "./CliFailure.ts"
import { parseDuration } from "./Duration.ts"

/** Parsed `sign-jwt` flags. */
export interface SignJwtFlags {
  readonly admin: boolean
  readonly actorId: Option.Option<string>
  readonly apis: Option.Option<string>
  readonly expiresIn: Option.Option<string>
  readonly noExpiry: boolean
  readonly permissionsFile: Option.Option<string>
  readonly dashboardPreset: Option.Option<DashboardPreset>
  readonly privateKeyPath: Option.Option<string>
  readonly secretKeyPath: Option.Option<string>
}

/** A signing key file and the one algorithm it is used with. */
export type KeyRef = { readonly alg: "RS256"; readonly path: string } | { readonly alg: "HS256"; readonly path: string }

/** Where the `permissions` claim comes from, if any. */
export type RestrictionSource =
  | { readonly _tag: "File"; readonly path: string }
  | { readonly _tag: "Preset"; readonly preset: DashboardPreset }

/** Everything `sign-jwt` needs besides the clock, randomness and file contents. */
export interface SignPlan {
  readonly subject: string
  readonly expiresInSeconds: number | undefined
  readonly apis: ReadonlyArray<ServiceId> | undefined
  readonly restrictions: RestrictionSource | undefined
  readonly key: KeyRef
}

/** Usage errors of the flags alone (exclusive pairs, required choice, malformed values); empty when valid. */
export const signJwtFlagErrors = (flags: SignJwtFlags): ReadonlyArray<string> => {
  const errors: Array<string> = []
  if (flags.admin && Option.isSome(flags.actorId)) errors.push("--admin and --actorId are mutually exclusive")
  if (!flags.admin && Option.isNone(flags.actorId)) errors.push("one of --admin or --actorId <externalId> is required")
  if (Option.isSome(flags.actorId) && flags.actorId.value.trim() === "") errors.push("--actorId must not be empty")
  if (flags.noExpiry && Option.isSome(flags.expiresIn))
    errors.push("--expires-in and --no-expiry are mutually exclusive")
  if (Option.isSome(flags.permissionsFile) && Option.isSome(flags.dashboardPreset)) {
    errors.push("--permissions-file and --dashboard-preset are mutually exclusive")
  }
  if (Option.isSome(flags.privateKeyPath) && Option.isSome(flags.secretKeyPath)) {
    errors.push("--privateKeyPath and --secretKeyPath are mutually exclusive")
  }
  if (Option.isSome(flags.expiresIn)) {
    const parsed = parseDuration(flags.expiresIn.value)
    if (Result.isFailure(parsed)) errors.push(`--expires-in: ${parsed.failure.message}`)
  }
  if (Option.isSome(flags.apis)) {
    const parsed = parseApis(flags.apis.value)
    if (Result.isFailure(parsed)) errors.push(parsed.failure.message)
  }
  return errors
}

/**
 * Chooses the signing key: a flag wins; otherwise the config's `admin_private_key_path` (RS256) or
 * `admin_shared_key_path` (HS256); both configured without a flag is ambiguous and fails; with
 * neither, the embedded default's development key in the working directory (RS256).
 */
export const resolveSigningKey = (
  flags: Pick<SignJwtFlags, "privateKeyPath" | "secretKeyPath">,
  loaded: LoadedConfig
): Result.Result<KeyRef, CliFailure> => {
  if (Option.isSome(flags.privateKeyPath)) return Result.succeed({ alg: "RS256", path: flags.privateKeyPath.value })
  if (Option.isSome(flags.secretKeyPath)) return Result.succeed({ alg: "HS256", path: flags.secretKeyPath.value })
  const { admin_private_key_path: privatePath, admin_shared_key_path: sharedPath } = loaded.config
  const where = loaded.source === undefined ? "~/.svc.yaml (not found)" : `"${loaded.source}"`
  if (privatePath !== undefined && sharedPath !== undefined) {
    return Result.fail(
      new CliFailure({
        message:
          `config ${where} sets both admin_private_key_path and admin_shared_key_path; ` +
          "choose one with --privateKeyPath or --secretKeyPath"
      })
    )
  }
  if (privatePath !== undefined) return Result.succeed({ alg: "RS256", path: privatePath })
  if (sharedPath !== undefined) return Result.succeed({ alg: "HS256", path: sharedPath })
  if (loaded.devKeyPath !== undefined) return Result.succeed({ alg: "RS256", path: loaded.devKeyPath })
  return Result.fail(
    new CliFailure({
      message:
        "no signing key: pass --privateKeyPath <pem> or --secretKeyPath <file>, or set " +
        `admin_private_key_path or admin_shared_key_path in config ${where}, ` +
        `or run in the directory of an embedded svc (./${devKeyRelativePath})`
    })
  )
}

/** Resolves flags (already free of `signJwtFlagErrors`) and configuration into a `SignPlan`. */
export const resolveSignPlan = (flags: SignJwtFlags, loaded: LoadedConfig): Result.Result<SignPlan, CliFailure> =>
  Result.gen(function* () {
    const problems = signJwtFlagErrors(flags)
    if (problems.length > 0) return yield* Result.fail(new CliFailure({ message: problems.join("\n") }))
    const subject = Option.match(flags.actorId, {
      onNone: () => loaded.config.admin_username ?? "admin",
      onSome: (actorId) => actorId
    })
    const restrictions: RestrictionSource | undefined = Option.isSome(flags.permissionsFile)
      ? { _tag: "File", path: flags.permissionsFile.value }
      : Option.isSome(flags.dashboardPreset)
        ? { _tag: "Preset", preset: flags.dashboardPreset.value }
        : undefined
    // spec 5.4: expiry is optional; without --no-expiry a token expires (default 1h, presets 90d)
    const expiresInSeconds = flags.noExpiry
      ? undefined
      : Option.isSome(flags.expiresIn)
        ? yield* Result.mapError(
            parseDuration(flags.expiresIn.value),
            (error) => new CliFailure({ message: error.message })
          )
        : restrictions?._tag === "Preset"
          ? dashboardExpirySeconds
          : defaultExpirySeconds
    const apis = Option.isSome(flags.apis) ? yield* parseApis(flags.apis.value) : undefined
    const key = yield* resolveSigningKey(flags, loaded)
    return { subject, expiresInSeconds, apis, restrictions, key }
  })
