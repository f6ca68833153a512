/**
 * Pure construction of the claims `cli mcp-token` signs (docs/agents.md): a token for an AI agent
 * on `/mcp` only. It is valid for the api service alone, restricted to reading and proxying
 * connections (in one namespace subtree when given), and carries an `agent_access` claim — which
 * makes svc accept it only on `/mcp` — narrowed to the `--allow` rules when given.
 */
import { AgentAccessClaim, type AgentRule } from "@svc/domain/AgentAccess"
import type { Permission, TokenClaims } from "@svc/domain/Auth"
import { Result, Schema } from "effect"
import { CliFailure } from "./CliFailure.ts"
import { formatSchemaError } from "./SchemaIssues.ts"

/** What an agent token may do besides its `agent_access`: see, list and call connections. */
export const agentVerbs: ReadonlyArray<string> = ["get", "list", "proxy"]

/** The permission restriction of an agent token: connections of `namespace`'s subtree (all when absent). */
export const agentPermissions = (namespace: string | undefined): ReadonlyArray<Permission> => [
  { namespace: `${namespace ?? "root"}.**`, resources: ["connections"], verbs: [...agentVerbs] }
]

const decodeClaim = Schema.decodeUnknownResult(AgentAccessClaim)

/**
 * Parses `--allow` values, each `METHODS PATH` (`GET /v1/items/*`, `GET,POST /v1/items`), into
 * the claim's rules, validated like a connector's `agent_access`.
 */
export const parseAllow = (values: ReadonlyArray<string>): Result.Result<ReadonlyArray<AgentRule>, CliFailure> => {
  const rules: Array<{ methods: Array<string>; path: string }> = []
  for (const value of values) {
    const match = /^\s*([A-Za-z,]+)\s+(\S+)\s*$/.exec(value)
    if (match === null) {
      return Result.fail(
        new CliFailure({ message: `--allow "${value}": expected METHODS PATH, e.g. "GET,POST /v1/items/*"` })
      )
    }
    rules.push({ methods: (match[1] as string).split(",").filter((m) => m !== ""), path: match[2] as string })
  }
  const decoded = decodeClaim({ allow: rules }, { errors: "all", onExcessProperty: "error" })
  if (Result.isFailure(decoded)) {
    return Result.fail(new CliFailure({ message: `--allow: ${formatSchemaError(decoded.failure)}` }))
  }
  return Result.succeed(decoded.success.allow ?? [])
}

/** Inputs of `agentClaims`; times are whole seconds since the epoch. */
export interface AgentClaimsInput {
  readonly subject: string
  readonly issuedAt: number
  readonly jti: string
  readonly expiresInSeconds: number
  readonly namespace: string | undefined
  readonly allow: ReadonlyArray<AgentRule> | undefined
}

/** The claims of an agent token: `aud: [api]`, always expiring, restricted, and an `agent_access` claim. */
export const agentClaims = (input: AgentClaimsInput): TokenClaims => ({
  sub: input.subject,
  iat: input.issuedAt,
  jti: input.jti,
  exp: input.issuedAt + input.expiresInSeconds,
  aud: ["api"],
  permissions: agentPermissions(input.namespace),
  agent_access: input.allow === undefined || input.allow.length === 0 ? {} : { allow: input.allow }
})
