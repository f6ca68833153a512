/**
 * `cli sign-jwt` (spec 4.8): prints one signed actor token on stdout.
 */
import { Clock, Console, Effect } from "effect"
import { CliError, Command, Flag } from "effect/cli"
import { buildClaims, DashboardPreset, dashboardPresetPermissions, parsePermissionsDocument } from "../Claims.ts"
import { loadCliConfig } from "../CliConfig.ts"
import { readText } from "../Files.ts"
import { signToken } from "../Jwt.ts"
import { loadSigningKey, signingKeyFlags } from "../Keys.ts"
import { root } from "../Root.ts"
import { resolveSignPlan, signJwtFlagErrors } from "../SignPlan.ts"
import type { RestrictionSource } from "../SignPlan.ts"
import { TokenId } from "../TokenId.ts"

/** The flags of `sign-jwt`, exactly as spec 4.8 spells them. */
export const signJwtFlags = {
  admin: Flag.Boolean("admin").pipe(
    Flag.withoutNegation,
    Flag.withDefault(false),
    Flag.withDescription(
      'Sign for the configured admin_username (default "admin"); the server grants the permissions configured for it'
    )
  ),
  actorId: Flag.String("actorId").pipe(
    Flag.withMetavar("EXTERNAL_ID"),
    Flag.withDescription("Sign for the actor with this externalId (exclusive with --admin; one of them is required)"),
    Flag.optional
  ),
  apis: Flag.String("apis").pipe(
    Flag.withMetavar("LIST"),
    Flag.withDescription(
      "Comma list of services the token is valid for: admin-api, api, public, worker (default: all, no aud claim)"
    ),
    Flag.optional
  ),
  expiresIn: Flag.String("expires-in").pipe(
    Flag.withMetavar("DURATION"),
    Flag.withDescription(
      "Lifetime, units s m h d, combinable largest first: 30m, 12h, 7d, 1h30m (default 1h; 90d with --dashboard-preset)"
    ),
    Flag.optional
  ),
  noExpiry: Flag.Boolean("no-expiry").pipe(
    Flag.withoutNegation,
    Flag.withDefault(false),
    Flag.withDescription("Issue a token without exp (exclusive with --expires-in)")
  ),
  permissionsFile: Flag.String("permissions-file").pipe(
    Flag.withMetavar("PATH"),
    Flag.withDescription(
      "YAML or JSON file: an array of permissions, or an object with a permissions array; restricts the token"
    ),
    Flag.optional
  ),
  dashboardPreset: Flag.Literals("dashboard-preset", DashboardPreset.literals).pipe(
    Flag.withDescription(
      "Restrict to a metrics dashboard token: aggregate = app-metrics query/schema + list resources; logs also request-events:list"
    ),
    Flag.optional
  ),
  ...signingKeyFlags
}

const loadRestrictions = Effect.fnUntraced(function* (source: RestrictionSource | undefined) {
  if (source === undefined) return undefined
  if (source._tag === "Preset") return dashboardPresetPermissions(source.preset)
  const text = yield* readText(source.path, "permissions file")
  return yield* Effect.fromResult(parsePermissionsDocument(text, source.path))
})

/** `sign-jwt`: resolves flags and config, builds the claims and prints the signed token. */
export const signJwt = Command.make(
  "sign-jwt",
  signJwtFlags,
  Effect.fn("SignJwt")(function* (flags) {
    const { config } = yield* root
    const loaded = yield* loadCliConfig(config)
    const plan = yield* Effect.fromResult(resolveSignPlan(flags, loaded))
    const permissions = yield* loadRestrictions(plan.restrictions)
    const signing = yield* loadSigningKey(plan.key)
    const nowMillis = yield* Clock.currentTimeMillis
    const jti = yield* (yield* TokenId).next
    const claims = buildClaims({
      subject: plan.subject,
      issuedAt: Math.floor(nowMillis / 1000),
      jti,
      expiresInSeconds: plan.expiresInSeconds,
      apis: plan.apis,
      permissions
    })
    yield* Console.log(yield* signToken(claims, signing))
  })
).pipe(
  Command.validate((flags) => {
    const errors = signJwtFlagErrors(flags)
    return errors.length === 0
      ? Effect.void
      : Effect.fail(new CliError.ValidationError({ message: errors.join("\n  ") }))
  }),
  Command.withDescription("Print a signed actor JWT (RS256 with a private key, HS256 with a shared secret)"),
  Command.withExamples([
    { command: "cli sign-jwt --admin", description: "Admin token, valid 1h, signed with the configured key" },
    {
      command: "cli sign-jwt --actorId user-42 --apis api,public --expires-in 12h --privateKeyPath key.pem",
      description: "Token for one actor, only for the api and public services"
    },
    { command: "cli sign-jwt --admin --dashboard-preset logs", description: "Dashboard token valid 90 days" },
    {
      command: "cli sign-jwt --actorId ci --no-expiry --permissions-file perms.yaml",
      description: "Restricted, non-expiring"
    }
  ])
)
