/**
 * The connector definition document (snake_case, API-CONVENTIONS; `telemetry.propagateTraceContext`
 * as the spec prints it): display metadata, `auth`, `setup_flow`, `probes`, `proxy`,
 * `rate_limiting` (spec 2.9), `telemetry`, hooks (spec 2.10) and `agent_access` (docs/agents.md). Decoding materialises every
 * default, and decoding a decoded document gives it back unchanged. Unknown keys are rejected by
 * decoding with `definitionParseOptions`; JSON Schema compilation and hook syntax are checked by the
 * server on top of this schema.
 */
import { Effect, Predicate, Schema } from "effect"
import { AgentAccess, agentOrigin } from "./AgentAccess.ts"
import {
  ApiKeyBearerAuth,
  ApiKeyHeaderAuth,
  ApiKeyQueryAuth,
  BasicAuth,
  ConnectorAuth,
  NoneAuth,
  OAuth2AuthorizationCodeAuth,
  OAuth2ClientCredentialsAuth
} from "./ConnectorAuth.ts"
import { ConnectorProbe, placeholderKeys, probeUrlShape } from "./ConnectorProbe.ts"
import { ConnectorProxy, hostAllowed } from "./ConnectorProxy.ts"
import { ReactiveLimit } from "./ReactiveLimit.ts"
import { configurationKeys, SetupFlow } from "./SetupFlow.ts"

export { AuthType } from "./ConnectorAuth.ts"

/** Parse options for client definitions: every problem reported, unknown keys rejected. */
export const definitionParseOptions = { errors: "all", onExcessProperty: "error" } as const

/** Largest accepted definition document (bytes of YAML or JSON text). */
export const maxDefinitionBytes = 1024 * 1024

/** Largest accepted hook or shared script (bytes). */
export const maxScriptBytes = 256 * 1024

/** `type`: the kind of integration (e.g. `github`), projected as `svc/cxr/type` on connections. */
export const ConnectorType = Schema.String.check(
  Schema.makeFilter((value: string) => /^[a-z0-9](?:[a-z0-9._-]{0,61}[a-z0-9])?$/.test(value), {
    message: "type is 1 to 63 lowercase letters, digits, '.', '_' or '-', starting and ending alphanumeric"
  })
)

/** `logo_url`: an absolute https URL without credentials. */
export const LogoUrl = Schema.String.check(
  Schema.isMaxLength(2048, { message: "must be at most 2048 characters" }),
  Schema.makeFilter(
    (value: string) => {
      try {
        const url = new URL(value)
        if (url.protocol !== "https:") return "must be an https URL"
        return (url.username === "" && url.password === "") || "must not carry credentials"
      } catch {
        return "must be an absolute https URL"
      }
    },
    { expected: "an absolute https URL" }
  )
)

/** JavaScript source: non-blank, at most 256 KB. Syntax is checked by the server (QuickJS). */
export const JavaScriptSource = Schema.String.check(
  Schema.makeFilter((value: string) => value.trim() !== "" || "must not be blank", { expected: "JavaScript source" }),
  Schema.makeFilter((value: string) => new TextEncoder().encode(value).length <= maxScriptBytes, {
    message: `must be at most ${maxScriptBytes / 1024} KB`
  })
)

/** One migration hook: a JavaScript expression (spec 2.10). */
export const MigrationHook = Schema.Struct({ javascript: JavaScriptSource }).annotate({ identifier: "MigrationHook" })

/** `migrations`: the hooks run when a connection migration crosses this version (spec 2.10). */
export const Migrations = Schema.Struct({
  up: Schema.optionalKey(MigrationHook),
  down: Schema.optionalKey(MigrationHook)
}).annotate({ identifier: "Migrations" })
export type Migrations = typeof Migrations.Type

/** `telemetry`: `propagateTraceContext` overrides the server's outbound W3C trace header default (spec 8.3). */
export const ConnectorTelemetry = Schema.Struct({ propagateTraceContext: Schema.optionalKey(Schema.Boolean) }).annotate(
  { identifier: "ConnectorTelemetry" }
)

type Problem = { readonly path: ReadonlyArray<PropertyKey>; readonly issue: string }

interface CrossChecked {
  readonly setup_flow?: SetupFlow
  readonly probes?: ReadonlyArray<ConnectorProbe>
  readonly proxy: ConnectorProxy
  readonly agent_access?: AgentAccess
}

// agent_access: the origin the agent's paths go to is known and allowed by proxy.allowed_hosts.
const agentProblems = (definition: CrossChecked): Array<Problem> => {
  const access = definition.agent_access
  if (access === undefined || access.allow.length === 0) return []
  const origin = agentOrigin(access, definition.proxy.allowed_hosts)
  if (origin === undefined) {
    return [
      {
        path: ["agent_access", "base_url"],
        issue: "is required unless proxy.allowed_hosts names exactly one host (without a wildcard)"
      }
    ]
  }
  const url = new URL(origin)
  return hostAllowed(definition.proxy.allowed_hosts, url)
    ? []
    : [{ path: ["agent_access", "base_url"], issue: `${url.host} is not allowed by proxy.allowed_hosts` }]
}

// Rules that span blocks: probe ids, placeholders naming declared keys, probe hosts allowed.
const crossProblems = (definition: CrossChecked): Array<Problem> => {
  const problems: Array<Problem> = []
  const keys = configurationKeys(definition.setup_flow)
  const ids = new Set<string>()
  for (const [index, probe] of (definition.probes ?? []).entries()) {
    const at = (...rest: ReadonlyArray<PropertyKey>) => ["probes", index, ...rest]
    if (ids.has(probe.id)) problems.push({ path: at("id"), issue: "must not repeat a probe id" })
    ids.add(probe.id)
    const texts: ReadonlyArray<[ReadonlyArray<PropertyKey>, string]> = [
      [at("url"), probe.url],
      ...Object.entries(probe.headers ?? {}).map(([name, value]): [ReadonlyArray<PropertyKey>, string] => [
        at("headers", name),
        value
      ])
    ]
    for (const [path, text] of texts) {
      for (const key of placeholderKeys(text)) {
        if (!keys.has(key)) {
          problems.push({ path, issue: `{{cfg.${key}}} names a key no setup_flow step declares` })
        }
      }
    }
    const shape = probeUrlShape(probe.url)
    if (shape?.hostIsFixed && !hostAllowed(definition.proxy.allowed_hosts, shape.url)) {
      problems.push({ path: at("url"), issue: `${shape.url.host} is not allowed by proxy.allowed_hosts` })
    }
  }
  return [...problems, ...agentProblems(definition)]
}

const head = {
  type: ConnectorType,
  display_name: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(200))),
  description: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(4000))),
  logo_url: Schema.optionalKey(LogoUrl)
}

const tail = {
  setup_flow: Schema.optionalKey(SetupFlow),
  probes: Schema.optionalKey(
    Schema.Array(ConnectorProbe).check(Schema.isMaxLength(50, { message: "must have at most 50 probes" }))
  ),
  proxy: ConnectorProxy.pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
  rate_limiting: ReactiveLimit.pipe(Schema.withDecodingDefaultKey(Effect.succeed({}))),
  telemetry: Schema.optionalKey(ConnectorTelemetry),
  javascript: Schema.optionalKey(JavaScriptSource),
  migrations: Schema.optionalKey(Migrations),
  /** What an AI agent may call over MCP (docs/agents.md); absent: nothing. */
  agent_access: Schema.optionalKey(AgentAccess)
}

const crossCheck = Schema.makeFilter(crossProblems, { expected: "a consistent connector definition" })

/** A connector definition version's document; the decoded form has every default materialised. */
export const ConnectorDefinition = Schema.Struct({ ...head, auth: ConnectorAuth, ...tail })
  .check(crossCheck)
  .annotate({ identifier: "ConnectorDefinition" })
export type ConnectorDefinition = typeof ConnectorDefinition.Type

/** A definition as a client writes it (defaulted keys optional). */
export type ConnectorDefinitionInput = typeof ConnectorDefinition.Encoded

const variants = {
  none: Schema.Struct({ ...head, auth: NoneAuth, ...tail }).check(crossCheck),
  api_key_bearer: Schema.Struct({ ...head, auth: ApiKeyBearerAuth, ...tail }).check(crossCheck),
  api_key_header: Schema.Struct({ ...head, auth: ApiKeyHeaderAuth, ...tail }).check(crossCheck),
  api_key_query: Schema.Struct({ ...head, auth: ApiKeyQueryAuth, ...tail }).check(crossCheck),
  basic: Schema.Struct({ ...head, auth: BasicAuth, ...tail }).check(crossCheck),
  oauth2_authorization_code: Schema.Struct({ ...head, auth: OAuth2AuthorizationCodeAuth, ...tail }).check(crossCheck),
  oauth2_client_credentials: Schema.Struct({ ...head, auth: OAuth2ClientCredentialsAuth, ...tail }).check(crossCheck)
}

const authChoice = (auth: Readonly<Record<string, unknown>>): keyof typeof variants | Problem => {
  switch (auth.type) {
    case "none":
    case "basic":
      return auth.type
    case "api_key":
      return auth.placement === "bearer" || auth.placement === "header" || auth.placement === "query"
        ? `api_key_${auth.placement}`
        : { path: ["placement"], issue: "must be one of bearer, header, query" }
    case "oauth2":
      return auth.grant_type === "authorization_code" || auth.grant_type === "client_credentials"
        ? `oauth2_${auth.grant_type}`
        : { path: ["grant_type"], issue: "must be one of authorization_code, client_credentials" }
    default:
      return { path: ["type"], issue: "must be one of none, api_key, basic, oauth2" }
  }
}

// Reports why `auth` names no method; used only when it names none, so it never succeeds.
const UnknownAuth = Schema.Unknown.check(
  Schema.makeFilter(
    (auth: unknown) => {
      if (!Predicate.isObject(auth)) return "must be an object with a type"
      const choice = authChoice(auth)
      return typeof choice === "string" ? true : choice
    },
    { expected: "an auth block" }
  )
)
const unknownAuthDefinition = Schema.Struct({ ...head, auth: UnknownAuth, ...tail })

/**
 * Decodes a client definition with `definitionParseOptions`, choosing the auth variant from
 * `auth.type` (and `placement` / `grant_type`) first so errors name the missing field.
 */
export const decodeConnectorDefinition = (input: unknown): Effect.Effect<ConnectorDefinition, Schema.SchemaError> => {
  const auth = Predicate.isObject(input) ? input.auth : undefined
  const choice = Predicate.isObject(auth) ? authChoice(auth) : undefined
  if (typeof choice === "string") {
    return Schema.decodeUnknownEffect(variants[choice])(input, definitionParseOptions)
  }
  if (choice === undefined && !(Predicate.isObject(input) && "auth" in input)) {
    return Schema.decodeUnknownEffect(ConnectorDefinition)(input, definitionParseOptions)
  }
  return Schema.decodeUnknownEffect(unknownAuthDefinition)(input, definitionParseOptions).pipe(
    Effect.flatMap(() => Effect.die("an auth block without a method decoded"))
  )
}
