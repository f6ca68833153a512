/**
 * The warm door of the data plane (docs/proxy.md "Two doors"): the request hook of the api and
 * admin-api Node servers, called before the router. It takes `_proxy_raw` and `_proxy` of a
 * caller this service authenticated for a proxy endpoint less than 5 s ago (`ProxyCallers`) to a
 * connection whose target is cached and fresh (`ProxyTargets.peek`), and hands them to the one
 * exchange; everything else it answers false for before touching anything, and the router's
 * HttpApi route (the cold door) takes it.
 *
 * Once taken, every answer is the one the cold door gives: the upstream's (as it is, or in its
 * envelope), svc's own 429, or the standard error body with the error's status — an envelope
 * that does not parse, is refused by the input checks or does not decode answers the 400 the
 * route's payload decoding answers.
 */
import type { IncomingMessage, ServerResponse } from "node:http"
import type { ServiceId } from "@svc/domain/Auth"
import { BadRequest, issueDetails } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { ProxyRequest } from "@svc/domain/Proxy"
import { jsonProblem, jsonProblemIssue } from "@svc/domain/StrictInput"
import { type Cause, Exit, Schema, SchemaIssue } from "effect"
import type { OutboundResponse, StreamedResponse } from "../outbound/Outbound.ts"
import { inboundSpanOf, noteInboundActor } from "../telemetry/Inbound.ts"
import { type EnvelopeRequest, readEnvelope, warmEnvelopeReply } from "./EnvelopeRoute.ts"
import type { Exchange } from "./Exchange.ts"
import type { ProxyCallers } from "./ProxyCallers.ts"
import type { ProxyTarget, ProxyTargets } from "./ProxyTargets.ts"
import { type RawRequest, readRaw, warmRawReply } from "./RawRoute.ts"
import { type Leg, type Reply, writeError } from "./Route.ts"

/** Called for each request before the router: true when it took the request (the router never sees it). */
export type RequestHook = (incoming: IncomingMessage, response: ServerResponse) => boolean

const connectionsPrefix = "/api/v1/connections/"
const rawSuffix = "/_proxy_raw"
const envelopeSuffix = "/_proxy"
const rawMethods: ReadonlySet<string> = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"])
/** An id the router would decode to itself (no percent-encoding, nothing the input guard refuses). */
const plainId = /^[A-Za-z0-9_.~-]{1,200}$/

/** The route's payload decoding, as HttpApi runs it (`Apis.ts`: every problem, excess keys refused). */
const decodeEnvelope = Schema.decodeUnknownExit(Schema.Union([ProxyRequest]), {
  errors: "all",
  onExcessProperty: "error"
})

/** The 400 the route answers for a payload it cannot decode (`ErrorHandling.ts`). */
const invalidBody = (issue: SchemaIssue.Issue) =>
  new BadRequest({ error: "invalid request body", code: "invalid_request", details: issueDetails(issue, "body") })

/** `application/json`, with parameters or not: what the `_proxy` route decodes as its payload. */
const isJson = (contentType: string | undefined): boolean => {
  if (contentType === undefined) return false
  const semicolon = contentType.indexOf(";")
  return (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase() === "application/json"
}

/** The declared length of a non-empty body the route would read (`maxBodyBytes` at most), or undefined. */
const bufferableLength = (request: IncomingMessage, maxBodyBytes: number): number | undefined => {
  if (request.headers["transfer-encoding"] !== undefined) return undefined
  const declared = request.headers["content-length"]
  if (declared === undefined || !/^\d{1,10}$/.test(declared)) return undefined
  const length = Number(declared)
  return length > 0 && length <= maxBodyBytes ? length : undefined
}

/** The envelope in `body`, or the 400 the route answers for it. */
const envelopeOf = (body: Buffer): EnvelopeRequest | BadRequest => {
  let parsed: unknown
  try {
    parsed = JSON.parse(body.toString("utf8"))
  } catch {
    return invalidBody(new SchemaIssue.InvalidValue({ message: "Expected a valid JSON body" }))
  }
  const problem = jsonProblem(parsed)
  if (problem !== undefined) return invalidBody(jsonProblemIssue(problem))
  const payload = decodeEnvelope(parsed)
  if (Exit.isFailure(payload)) {
    const failure = payload.cause.reasons.find((reason) => reason._tag === "Fail")
    if (failure === undefined) throw new Error("decoding the envelope failed without an issue")
    return invalidBody(failure.error.issue)
  }
  return readEnvelope(payload.value)
}

/** What the warm door works with: the same exchange, legs, caches and callers as the cold door. */
export interface WarmDoorDeps {
  readonly service: ServiceId
  readonly callers: ProxyCallers["Service"]
  readonly targets: ProxyTargets["Service"]
  readonly exchange: Exchange
  readonly raw: Leg<RawRequest, StreamedResponse>
  readonly envelope: Leg<EnvelopeRequest, OutboundResponse>
  readonly maxBodyBytes: number
  /** Logs a defect answered with the standard 500 (as the router's error handling does). */
  readonly logDefect: (cause: Cause.Cause<unknown>) => void
  /** Counts a request this door took. */
  readonly took: () => void
}

/** The warm door of `deps.service`. */
export const makeWarmDoor = (deps: WarmDoorDeps): RequestHook => {
  const { callers, targets, exchange, logDefect } = deps

  /** Runs the exchange; a caller that goes away before its answer abandons it. */
  const run = <R extends RawRequest | EnvelopeRequest, U extends StreamedResponse | OutboundResponse>(
    leg: Leg<R, U>,
    actor: AuthenticatedActor,
    target: ProxyTarget,
    request: R,
    reply: Reply<U>,
    incoming: IncomingMessage,
    response: ServerResponse
  ) => {
    const abandon = exchange(leg, actor, target, request, reply, inboundSpanOf(incoming))
    if (!response.writableEnded) response.once("close", abandon)
  }

  const raw = (
    actor: AuthenticatedActor,
    target: ProxyTarget,
    incoming: IncomingMessage,
    response: ServerResponse
  ): void => {
    const request = readRaw({ request: incoming, response })
    if (request instanceof BadRequest) writeError(response, request)
    else run(deps.raw, actor, target, request, warmRawReply(request, logDefect), incoming, response)
  }

  const envelope = (
    actor: AuthenticatedActor,
    target: ProxyTarget,
    incoming: IncomingMessage,
    response: ServerResponse
  ): void => {
    const chunks: Array<Buffer> = []
    let size = 0
    incoming.on("data", (chunk: Buffer) => {
      size += chunk.byteLength
      chunks.push(chunk)
    })
    incoming.once("error", () => response.destroy())
    incoming.once("end", () => {
      const request = envelopeOf(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size))
      if (request instanceof BadRequest) writeError(response, request)
      else run(deps.envelope, actor, target, request, warmEnvelopeReply(response, logDefect), incoming, response)
    })
  }

  return (incoming, response) => {
    const url = incoming.url
    if (url === undefined || !url.startsWith(connectionsPrefix)) return false
    const isRaw = url.endsWith(rawSuffix)
    if (isRaw) {
      if (!rawMethods.has(incoming.method ?? "")) return false
    } else if (!url.endsWith(envelopeSuffix) || incoming.method !== "POST") return false
    const id = url.slice(connectionsPrefix.length, url.length - (isRaw ? rawSuffix : envelopeSuffix).length)
    if (!plainId.test(id)) return false
    const authorization = incoming.headers.authorization
    if (authorization === undefined) return false
    const actor = callers.lookup(deps.service, authorization)
    if (actor === undefined) return false
    const target = targets.peek(actor, id)
    if (target === undefined) return false
    if (
      !isRaw &&
      (!isJson(incoming.headers["content-type"]) || bufferableLength(incoming, deps.maxBodyBytes) === undefined)
    ) {
      return false
    }
    deps.took()
    // The access log names the caller (the router's bearer middleware does it for the cold door).
    noteInboundActor(incoming, actor.id)
    if (isRaw) raw(actor, target, incoming, response)
    else envelope(actor, target, incoming, response)
    return true
  }
}
