/**
 * What an AI agent may reach through a connection over MCP (API-CONVENTIONS "Agent access over
 * MCP"; docs/agents.md): the connector definition's `agent_access` (the only operations
 * `call_connection` can reach; absent or empty refuses every call) and a token's `agent_access`
 * claim, which narrows it further (a call must match both). A rule is methods plus a path glob
 * validated and matched like a rate-limit rule's `path_match` of kind `glob` (`*` any run of
 * non-`/` characters, `?` one, never crossing `/`): one glob implementation
 * (`compilePathMatch`). Paths are matched in the proxy's one form (`normalisePath`), after the
 * method is upper-cased. Pure.
 */
import { Schema } from "effect"
import { compilePathMatch, HttpMethod, maxPathMatchLength } from "./RateLimitDefinition.ts"

const uniqueMethods = Schema.makeFilter<ReadonlyArray<string>>(
  (items) =>
    items.flatMap((item, index) => (items.indexOf(item) < index ? [{ path: [index], issue: "must not repeat" }] : [])),
  { expected: "unique methods" }
)

/** A path glob: starts with `/`, at most 1024 characters (as a `path_match` glob value). */
export const AgentPathGlob = Schema.String.check(
  Schema.isMinLength(1, { message: "must not be empty" }),
  Schema.isMaxLength(maxPathMatchLength, { message: `must be at most ${maxPathMatchLength} characters` }),
  Schema.makeFilter((value: string) => value.startsWith("/") || "a path glob must start with /", {
    expected: "a path glob starting with /"
  })
)

/** One allowed operation: upper-case methods and a path glob. */
export const AgentRule = Schema.Struct({
  methods: Schema.Array(HttpMethod).check(
    Schema.isMinLength(1, { message: "must name at least one method" }),
    Schema.isMaxLength(16, { message: "must name at most 16 methods" }),
    uniqueMethods
  ),
  path: AgentPathGlob
}).annotate({ identifier: "AgentRule" })
export type AgentRule = typeof AgentRule.Type

const AllowList = Schema.Array(AgentRule).check(Schema.isMaxLength(200, { message: "must have at most 200 rules" }))

/** An absolute http(s) origin (`scheme://host[:port]`, no path, query, fragment or credentials). */
export const AgentBaseUrl = Schema.String.check(
  Schema.isMaxLength(2048, { message: "must be at most 2048 characters" }),
  Schema.makeFilter(
    (text: string) => {
      let url: URL
      try {
        url = new URL(text)
      } catch {
        return "must be an absolute http or https URL"
      }
      if (url.protocol !== "http:" && url.protocol !== "https:") return "must be an http or https URL"
      if (url.username !== "" || url.password !== "") return "must not carry credentials"
      if ((url.pathname !== "/" && url.pathname !== "") || url.search !== "" || url.hash !== "") {
        return "must be an origin only (scheme, host and port; the agent gives the path)"
      }
      return true
    },
    { expected: "an http(s) origin" }
  )
)

/**
 * A connector definition's `agent_access`: `allow` lists the operations an agent may call;
 * `base_url` is the origin the agent's paths go to (default: `https://` and the one host of
 * `proxy.allowed_hosts`; checked against them by the definition).
 */
export const AgentAccess = Schema.Struct({
  base_url: Schema.optionalKey(AgentBaseUrl),
  allow: AllowList
}).annotate({ identifier: "AgentAccess" })
export type AgentAccess = typeof AgentAccess.Type

/**
 * A token's `agent_access` claim: a further restriction in the same shape (without `base_url`).
 * Without `allow` it narrows nothing, but the token is still an agent token (accepted only on `/mcp`).
 */
export const AgentAccessClaim = Schema.Struct({ allow: Schema.optionalKey(AllowList) }).annotate({
  identifier: "AgentAccessClaim"
})
export type AgentAccessClaim = typeof AgentAccessClaim.Type

/** A compiled allow list: true when `method` (upper case) and `path` (normalised) match one rule. */
export type AgentMatcher = (method: string, path: string) => boolean

const compiled = new WeakMap<ReadonlyArray<AgentRule>, AgentMatcher>()

/** The matcher of an allow list (compiled once per list object). */
export const agentMatcher = (allow: ReadonlyArray<AgentRule>): AgentMatcher => {
  const known = compiled.get(allow)
  if (known !== undefined) return known
  const rules = allow.map((rule) => ({
    methods: new Set(rule.methods),
    path: compilePathMatch({ kind: "glob", value: rule.path })
  }))
  const matcher: AgentMatcher = (method, path) => rules.some((rule) => rule.methods.has(method) && rule.path(path))
  compiled.set(allow, matcher)
  return matcher
}

/** An escaped `/` or `\`: an upstream may decode it into a separator the glob never saw. */
const escapedSeparator = /%2f|%5c/i

/** Why an agent's call is refused, or undefined when the connector and the token both allow it. */
export const agentRefusal = (
  access: AgentAccess | undefined,
  claim: AgentAccessClaim | undefined,
  method: string,
  path: string
): string | undefined => {
  if (access === undefined || access.allow.length === 0) return "the connector does not allow agent access"
  if (escapedSeparator.test(path)) return "an agent path must not contain an escaped / or \\ (%2F, %5C)"
  if (!agentMatcher(access.allow)(method, path))
    return `${method} ${path} is not allowed by the connector's agent_access`
  if (claim?.allow !== undefined && !agentMatcher(claim.allow)(method, path)) {
    return `${method} ${path} is not allowed by the token's agent_access`
  }
  return undefined
}

const defaultPorts: Record<string, string> = { "http:": "80", "https:": "443" }

/**
 * The origin an agent's paths go to: `base_url`, else `https://` and the one exact host of
 * `allowedHosts` (with its port); undefined when there is none to take.
 */
export const agentOrigin = (access: AgentAccess, allowedHosts: ReadonlyArray<string>): string | undefined => {
  if (access.base_url !== undefined) {
    const url = new URL(access.base_url)
    const port = url.port === "" || url.port === defaultPorts[url.protocol] ? "" : `:${url.port}`
    return `${url.protocol}//${url.hostname}${port}`
  }
  const exact = allowedHosts.filter((host) => !host.startsWith("*."))
  if (allowedHosts.length !== 1 || exact.length !== 1) return undefined
  return `https://${exact[0]}`
}
