/**
 * Pure construction of the actor JWT claims that `cli sign-jwt` signs (spec 5, API-CONVENTIONS
 * "Authentication"): subject, service allowlist, expiry and permission restrictions.
 */
import { Result, Schema } from "effect"
import { allServiceIds, Permission, ServiceId } from "@svc/domain/Auth"
import type { TokenClaims } from "@svc/domain/Auth"
import { parse as parseYaml } from "yaml"
import { CliFailure } from "./CliFailure.ts"
import { formatSchemaError } from "./SchemaIssues.ts"

/** Expiry when neither `--expires-in` nor `--no-expiry` nor a dashboard preset is given: 1 hour. */
export const defaultExpirySeconds = 3_600

/** Expiry of a `--dashboard-preset` token unless overridden: 90 days (API-CONVENTIONS). */
export const dashboardExpirySeconds = 90 * 86_400

/** The `--dashboard-preset` values. */
export const DashboardPreset = Schema.Literals(["aggregate", "logs"])
export type DashboardPreset = typeof DashboardPreset.Type

// API-CONVENTIONS "--dashboard-preset": metrics query and schema plus list on the resource lists
const aggregatePermissions: ReadonlyArray<Permission> = [
  { namespace: "root.**", resources: ["app-metrics"], verbs: ["query", "schema"] },
  {
    namespace: "root.**",
    resources: ["namespaces", "connectors", "connections", "actors", "rate_limits"],
    verbs: ["list"]
  }
]

/** Permission restrictions of a dashboard token; `logs` adds `request-events:list`. */
export const dashboardPresetPermissions = (preset: DashboardPreset): ReadonlyArray<Permission> =>
  preset === "aggregate"
    ? aggregatePermissions
    : [...aggregatePermissions, { namespace: "root.**", resources: ["request-events"], verbs: ["list"] }]

/**
 * Parses `--apis` (comma list of service ids, spec 5.2) into a deduplicated allowlist in canonical
 * order, or `undefined` when it names every service (no `aud` claim).
 */
export const parseApis = (text: string): Result.Result<ReadonlyArray<ServiceId> | undefined, CliFailure> => {
  const names = text.split(",").map((name) => name.trim())
  const unknown = names.filter((name) => !Schema.is(ServiceId)(name))
  if (unknown.length > 0) {
    const shown = unknown.map((name) => (name === "" ? "(empty)" : `"${name}"`)).join(", ")
    return Result.fail(
      new CliFailure({
        message: `--apis: unknown service id ${shown}; valid ids are ${allServiceIds.join(", ")}`
      })
    )
  }
  const selected = allServiceIds.filter((id) => names.includes(id))
  return Result.succeed(selected.length === allServiceIds.length ? undefined : selected)
}

const PermissionList = Schema.Array(Permission)
const PermissionsObject = Schema.Struct({ permissions: PermissionList })
const decodeList = Schema.decodeUnknownResult(PermissionList)
const decodeObject = Schema.decodeUnknownResult(PermissionsObject)

/**
 * Decodes a permissions file (spec 4.8): YAML, or JSON when the name ends in `.json`; either an
 * array of permissions or an object with a `permissions` array. Unknown keys are rejected.
 */
export const parsePermissionsDocument = (
  text: string,
  source: string
): Result.Result<ReadonlyArray<Permission>, CliFailure> => {
  const invalid = (detail: string) =>
    Result.fail(
      new CliFailure({ message: `invalid permissions file "${source}":\n  ${detail.split("\n").join("\n  ")}` })
    )
  let document: unknown
  try {
    document = source.toLowerCase().endsWith(".json") ? JSON.parse(text) : parseYaml(text)
  } catch (error) {
    return invalid(error instanceof Error ? error.message : String(error))
  }
  const options = { onExcessProperty: "error", errors: "all" } as const
  const decoded = Array.isArray(document)
    ? decodeList(document, options)
    : typeof document === "object" && document !== null
      ? Result.map(decodeObject(document, options), (object) => object.permissions)
      : undefined
  if (decoded === undefined) return invalid("expected an array of permissions or an object with a `permissions` array")
  if (Result.isFailure(decoded)) return invalid(formatSchemaError(decoded.failure))
  if (decoded.success.length === 0) return invalid("the permissions list is empty")
  return Result.succeed(decoded.success)
}

/** Inputs of `buildClaims`; times are in whole seconds since the epoch. */
export interface ClaimsInput {
  readonly subject: string
  readonly issuedAt: number
  readonly jti: string
  readonly expiresInSeconds: number | undefined
  readonly apis: ReadonlyArray<ServiceId> | undefined
  readonly permissions: ReadonlyArray<Permission> | undefined
}

/**
 * Builds the claims: `sub`, `iat`, `jti`; `exp` only when expiring (spec 5.4); `aud` only when
 * restricted to some services (spec 5.2); `permissions` only when restricting (spec 5.5).
 */
export const buildClaims = (input: ClaimsInput): TokenClaims => ({
  sub: input.subject,
  iat: input.issuedAt,
  jti: input.jti,
  ...(input.expiresInSeconds === undefined ? {} : { exp: input.issuedAt + input.expiresInSeconds }),
  ...(input.apis === undefined ? {} : { aud: input.apis }),
  ...(input.permissions === undefined ? {} : { permissions: input.permissions })
})
