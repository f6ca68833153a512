/**
 * An agent's `call_connection` over MCP (docs/agents.md): its request as the one exchange takes it
 * (an envelope request marked `via: "mcp"`), checked against the connector's `agent_access` and
 * the token's narrowing in the proxy's one path and method form (`RequestForm.ts`), and the
 * upstream's answer as the agent gets it: svc's own and cookie headers dropped, the body capped at
 * `agentBodyCap` with a marker, and any value of the connection's credentials replaced.
 * Pure.
 */
import { type AgentAccessClaim, agentOrigin, agentRefusal } from "@svc/domain/AgentAccess"
import type { StoredCredentials } from "@svc/domain/ConnectorAuth"
import { BadRequest, Forbidden, RateLimited } from "@svc/domain/Errors"
import type { Schema } from "effect"
import type { OutboundResponse } from "../outbound/Outbound.ts"
import { type EnvelopeRequest, readEnvelope } from "./EnvelopeRoute.ts"
import type { ProxyTarget } from "./ProxyTargets.ts"
import { normalisePath, upperMethod } from "./RequestForm.ts"
import type { SvcAnswer } from "./Stages.ts"

/** Largest body an agent gets back (bytes of the upstream body); more is cut with a marker. */
export const agentBodyCap = 64 * 1024

/** What replaces a credential's value in anything returned to an agent. */
export const redactedMarker = "[redacted by svc]"

/** The request of `call_connection` (the tool's input without the connection id). */
export interface AgentCallInput {
  readonly method: string
  readonly path: string
  readonly query?: Readonly<Record<string, string | ReadonlyArray<string>>> | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly body?: unknown
}

/** The upstream's answer as the agent gets it (`call_connection`'s result). */
export interface AgentResult {
  readonly status: number
  readonly headers: Record<string, string>
  /** The body parsed, when the upstream declared JSON, it parses and it was not cut. */
  readonly json?: Schema.Json
  /** The body as text otherwise (UTF-8; a binary body is described, not shown). */
  readonly text?: string
  /** The upstream body's size in bytes. */
  readonly size: number
  /** True when the body was longer than `agentBodyCap` and `text` ends with the marker. */
  readonly truncated: boolean
}

const denied = (error: string) => new Forbidden({ error, code: "agent_access_denied" })

/**
 * The exchange's request for an agent's call to `target`, or why it is refused before anything is
 * recorded or counted: 403 `agent_access_denied` (no `agent_access`, or the method and path match
 * no rule of the connector, or of the token's claim), 400 for a path that is not one.
 */
export const agentRequest = (
  target: ProxyTarget,
  claim: AgentAccessClaim | undefined,
  input: AgentCallInput
): EnvelopeRequest | BadRequest | Forbidden => {
  const access = target.definition.agent_access
  if (access === undefined || access.allow.length === 0) {
    return denied(`connector ${target.row.connectorId} does not allow agent access`)
  }
  const origin = agentOrigin(access, target.definition.proxy.allowed_hosts)
  if (origin === undefined) return denied(`connector ${target.row.connectorId} names no base_url for agents`)
  if (!input.path.startsWith("/") || input.path.startsWith("//") || /[?#\s]/.test(input.path)) {
    return new BadRequest({
      error: "path must be an absolute path without query or fragment (give the query as query)",
      code: "invalid_request",
      details: [{ field: "path", message: "must start with a single / and hold no ?, # or whitespace" }]
    })
  }
  const url = new URL(origin)
  url.pathname = input.path
  for (const [name, value] of Object.entries(input.query ?? {})) {
    for (const one of typeof value === "string" ? [value] : value) url.searchParams.append(name, one)
  }
  if (url.href.length > 8192) {
    return new BadRequest({ error: "the URL is longer than 8192 characters", code: "invalid_request" })
  }
  // The proxy's one form, so the rule checked here is the path the rules, the event and the upstream see.
  normalisePath(url)
  const method = upperMethod({
    method: input.method,
    url,
    headers: {},
    labels: undefined,
    replayable: true,
    bodySize: 0
  }).method
  const refusal = agentRefusal(access, claim, method, url.pathname)
  if (refusal !== undefined) return denied(refusal)
  const request = readEnvelope({
    url: url.href,
    method,
    ...(input.headers === undefined ? {} : { headers: { ...input.headers } }),
    ...(input.body === undefined ? {} : { bodyJson: input.body as never })
  })
  if (request instanceof BadRequest) return request
  return { ...request, via: "mcp" }
}

/** svc's own answer (a rate-limit rule or the cool-down) as the error the agent gets. */
export const agentRateLimited = (answer: SvcAnswer): RateLimited => {
  const body = JSON.parse(Buffer.from(answer.body).toString("utf8")) as {
    error: string
    rate_limit_id: string | null
    retry_after_seconds: number
  }
  return new RateLimited({
    error: body.error,
    rate_limit_id: body.rate_limit_id,
    retry_after_seconds: body.retry_after_seconds
  })
}

/** Strings of the credentials an upstream could echo (the basic pair also as its header form). */
const secretsOf = (credentials: StoredCredentials | undefined): ReadonlyArray<string> => {
  if (credentials === undefined) return []
  const out: Array<string> = []
  const walk = (value: unknown, key: string) => {
    if (typeof value === "string") {
      if (value.length >= 6 && !["kind", "username", "client_id", "token_type", "scope"].includes(key)) out.push(value)
    } else if (typeof value === "object" && value !== null) {
      for (const [k, v] of Object.entries(value)) walk(v, k)
    }
  }
  walk(credentials, "")
  if (credentials.kind === "basic") {
    out.push(Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64"))
  }
  return out
}

const redact = (text: string, secrets: ReadonlyArray<string>): string => {
  let out = text
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(redactedMarker)
  return out
}

const jsonType = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i
/** Headers never returned to an agent: svc's own, and cookies (an upstream session is a credential). */
const hiddenHeader = (name: string) => name.startsWith("x-svc-") || name === "set-cookie" || name === "set-cookie2"

/** The upstream's answer to `target` as the agent gets it. */
export const agentResult = (
  target: ProxyTarget,
  answer: Pick<OutboundResponse, "status" | "headers" | "body">
): AgentResult => {
  const secrets = secretsOf(target.credentials)
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(answer.headers)) {
    const lower = name.toLowerCase()
    if (hiddenHeader(lower)) continue
    headers[lower] = redact(typeof value === "string" ? value : value.join(", "), secrets)
  }
  const size = answer.body.byteLength
  if (size === 0) return { status: answer.status, headers, size, truncated: false }
  const decoded = new TextDecoder("utf-8", { fatal: false }).decode(answer.body)
  // A body that is mostly not text (replacement characters) is described rather than shown.
  const replaced = decoded.split("\uFFFD").length - 1
  if (replaced > 16 && replaced > decoded.length / 10) {
    return { status: answer.status, headers, text: `[binary body of ${size} bytes not shown]`, size, truncated: false }
  }
  // Redacted before it is cut, so a cut never leaves part of a credential.
  const text = redact(decoded, secrets)
  const encoded = Buffer.from(text, "utf8")
  if (encoded.byteLength > agentBodyCap) {
    const shown = new TextDecoder("utf-8", { fatal: false }).decode(encoded.subarray(0, agentBodyCap))
    const marker = `\n[truncated by svc: ${agentBodyCap} of ${encoded.byteLength} bytes shown]`
    return { status: answer.status, headers, text: `${shown}${marker}`, size, truncated: true }
  }
  const contentType = headers["content-type"]
  if (contentType !== undefined && jsonType.test(contentType)) {
    try {
      return { status: answer.status, headers, json: JSON.parse(text) as Schema.Json, size, truncated: false }
    } catch {
      // Declared JSON that does not parse is returned as text.
    }
  }
  return { status: answer.status, headers, text, size, truncated: false }
}
