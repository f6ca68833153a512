/**
 * An agent's `call_connection` over MCP (docs/agents.md): its request as the one exchange takes it
 * (an envelope request marked `via: "mcp"`), checked against the connector's `agent_access` and
 * the token's narrowing in the proxy's one path and method form (`RequestForm.ts`), and the
 * upstream's answer as the agent gets it: svc's own and cookie headers dropped, the body capped at
 * `agentBodyCap` with a marker, and any value of the connection's credentials replaced.
 * Pure.
 */
import { type AgentAccessClaim, agentOrigin, agentRefusal } from "@svc/domain/AgentAccess"
import { BadRequest, Forbidden, RateLimited } from "@svc/domain/Errors"
import type { ProxyRequest } from "@svc/domain/Proxy"
import type { Schema } from "effect"
import type { OutboundResponse } from "../outbound/Outbound.ts"
import { redact, redactJson, secretsOf } from "./AgentRedaction.ts"
import { type EnvelopeRequest, readEnvelope } from "./EnvelopeRoute.ts"
import type { ProxyTarget } from "./ProxyTargets.ts"
import { normalisePath, upperMethod } from "./RequestForm.ts"
import type { SvcAnswer } from "./Stages.ts"

/** Largest body an agent gets back (bytes of the upstream body); more is cut with a marker. */
export const agentBodyCap = 64 * 1024

/** The request of `call_connection` (the tool's input without the connection id). */
export interface AgentCallInput {
  readonly method: string
  readonly path: string
  readonly query?: Readonly<Record<string, string | ReadonlyArray<string>>> | undefined
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly body?: ProxyRequest["bodyJson"]
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
 * Headers and a query parameter many servers and frameworks read as "act on another method or
 * path" (method overrides, front-end URL rewrites, forwarded prefixes): an agent could reach an
 * operation its `agent_access` does not allow through them, so they are refused.
 */
const overridingHeaders = new Set([
  "x-http-method-override",
  "x-http-method",
  "x-method-override",
  "x-original-method",
  "x-original-url",
  "x-rewrite-url",
  "x-override-url",
  "x-forwarded-prefix",
  "x-forwarded-path",
  "x-forwarded-uri",
  "x-forwarded-host",
  "x-forwarded-proto",
  "x-forwarded-for",
  "x-forwarded-port",
  "x-forwarded-server",
  "x-real-ip",
  "forwarded"
])

/** Why `input` is refused for naming another method or path than the one checked, or undefined. */
const overridingInput = (input: AgentCallInput): string | undefined => {
  for (const name of Object.keys(input.headers ?? {})) {
    if (overridingHeaders.has(name.toLowerCase())) return `header ${name.toLowerCase()} is not allowed in an agent call`
  }
  for (const name of Object.keys(input.query ?? {})) {
    if (name.toLowerCase() === "_method") return "query parameter _method is not allowed in an agent call"
  }
  return undefined
}

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
  // No empty segment and no `;` parameter anywhere: an upstream that merges slashes or reads
  // `..;` as `..` would act on a path other than the one the rules matched.
  if (!input.path.startsWith("/") || /\/\/|[?#;\s]|%3b/i.test(input.path)) {
    return new BadRequest({
      error: "path must be an absolute path without query, fragment, empty segments or ; (give the query as query)",
      code: "invalid_request",
      details: [{ field: "path", message: "must start with a single / and hold no //, ;, ?, # or whitespace" }]
    })
  }
  const override = overridingInput(input)
  if (override !== undefined) return denied(override)
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
    ...(input.body === undefined ? {} : { bodyJson: input.body })
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

const jsonType = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i
/** Headers never returned to an agent: svc's own, and cookies (an upstream session is a credential). */
const hiddenHeader = (name: string) => name.startsWith("x-svc-") || name === "set-cookie" || name === "set-cookie2"

/**
 * The upstream's answer as the agent gets it; `targets` are the connection as the call began and
 * as it ended (a 401 refreshes the credentials and the retry's answer may echo the new ones).
 */
export const agentResult = (
  targets: ReadonlyArray<ProxyTarget>,
  answer: Pick<OutboundResponse, "status" | "headers" | "body">
): AgentResult => {
  const secrets = secretsOf(targets.map((target) => target.credentials))
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
      const json = redactJson(JSON.parse(text), secrets) as Schema.Json
      return { status: answer.status, headers, json, size, truncated: false }
    } catch {
      // Declared JSON that does not parse is returned as text.
    }
  }
  return { status: answer.status, headers, text, size, truncated: false }
}
