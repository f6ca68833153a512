/**
 * `cli mcp-token` (docs/agents.md): prints a token for an AI agent to reach svc's `/mcp` with.
 */
import { NamespacePath } from "@svc/domain/PermissionMatcher"
import { Clock, Console, Effect, Option, Result, Schema } from "effect"
import { CliError, Command, Flag } from "effect/cli"
import { agentClaims, parseAllow } from "../AgentToken.ts"
import { defaultExpirySeconds } from "../Claims.ts"
import { loadCliConfig } from "../CliConfig.ts"
import { CliFailure } from "../CliFailure.ts"
import { parseDuration } from "../Duration.ts"
import { signToken } from "../Jwt.ts"
import { loadSigningKey, signingKeyFlags } from "../Keys.ts"
import { root } from "../Root.ts"
import { resolveSigningKey } from "../SignPlan.ts"
import { TokenId } from "../TokenId.ts"

export const mcpTokenFlags = {
  actorId: Flag.String("actorId").pipe(
    Flag.withMetavar("EXTERNAL_ID"),
    Flag.withDescription("The actor the agent acts as (its externalId); its own permissions still apply")
  ),
  namespace: Flag.String("namespace").pipe(
    Flag.withMetavar("PATH"),
    Flag.withDescription("Only connections in this namespace and below (default: every namespace the actor may see)"),
    Flag.optional
  ),
  allow: Flag.String("allow").pipe(
    Flag.withMetavar("'METHODS PATH'"),
    Flag.withDescription(
      'Repeatable: narrow the connectors\' agent_access to these operations, e.g. --allow "GET /v1/items/*"'
    ),
    Flag.atLeast(0)
  ),
  expiresIn: Flag.String("expires-in").pipe(
    Flag.withMetavar("DURATION"),
    Flag.withDescription("Lifetime, units s m h d, combinable largest first: 30m, 12h, 7d (default 1h)"),
    Flag.optional
  ),
  ...signingKeyFlags
}

const validNamespace = Schema.is(NamespacePath)

/** `mcp-token`: an agent token (api only, connections get/list/proxy, `agent_access` claim). */
export const mcpToken = Command.make(
  "mcp-token",
  mcpTokenFlags,
  Effect.fn("McpToken")(function* (flags) {
    const { config } = yield* root
    const loaded = yield* loadCliConfig(config)
    const allow = yield* Effect.fromResult(parseAllow(flags.allow))
    const expiresInSeconds = Option.isSome(flags.expiresIn)
      ? yield* Effect.fromResult(
          Result.mapError(parseDuration(flags.expiresIn.value), (error) => new CliFailure({ message: error.message }))
        )
      : defaultExpirySeconds
    const signing = yield* loadSigningKey(yield* Effect.fromResult(resolveSigningKey(flags, loaded)))
    const nowMillis = yield* Clock.currentTimeMillis
    const jti = yield* (yield* TokenId).next
    const claims = agentClaims({
      subject: flags.actorId,
      issuedAt: Math.floor(nowMillis / 1000),
      jti,
      expiresInSeconds,
      namespace: Option.getOrUndefined(flags.namespace),
      allow
    })
    yield* Console.log(yield* signToken(claims, signing))
  })
).pipe(
  Command.validate((flags) => {
    const errors: Array<string> = []
    if (flags.actorId.trim() === "") errors.push("--actorId must not be empty")
    if (Option.isSome(flags.namespace) && !validNamespace(flags.namespace.value)) {
      errors.push(`--namespace: "${flags.namespace.value}" is not a namespace path such as root.acme`)
    }
    if (Option.isSome(flags.privateKeyPath) && Option.isSome(flags.secretKeyPath)) {
      errors.push("--privateKeyPath and --secretKeyPath are mutually exclusive")
    }
    return errors.length === 0
      ? Effect.void
      : Effect.fail(new CliError.ValidationError({ message: errors.join("\n  ") }))
  }),
  Command.withDescription(
    "Print a token for an AI agent: valid only on the api's /mcp, for reading and calling connections"
  ),
  Command.withExamples([
    {
      command: "cli mcp-token --actorId agent-1 --namespace root.acme --expires-in 7d",
      description: "An agent token for one tenant"
    },
    {
      command: 'cli mcp-token --actorId agent-1 --allow "GET /v1/items" --allow "GET /v1/items/*"',
      description: "Read-only items, whatever the connectors allow beyond that"
    }
  ])
)
