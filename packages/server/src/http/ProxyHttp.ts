/**
 * Handlers of `_proxy` and `_proxy_raw` on the api and admin-api (spec 4.2), and their fast path
 * (issue 16; docs/performance.md): a request the HttpApi route served once (its caller's token
 * verified, its connection's target loaded) is afterwards taken at the Node `request` event,
 * before the Effect router, and answered by the same pipeline in plain code — same stages, same
 * answers, same events. Anything not cached, unusual or failing takes the HttpApi route.
 */
import { NodeHttpServerRequest } from "@effect/platform-node"
import type { ServiceId } from "@svc/domain/Auth"
import { AdminApiV1, ApiV1 } from "@svc/domain/http/Apis"
import type { ProxyApi } from "@svc/domain/http/ProxyApi"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { Effect, Exit, Schema } from "effect"
import { HttpServerResponse, type HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import type * as http from "node:http"
import { IncomingMessage, type ServerResponse } from "node:http"
import { ProxyRequest } from "@svc/domain/Proxy"
import { jsonProblem } from "@svc/domain/StrictInput"
import { DataPlane } from "../proxy/DataPlane.ts"
import { noteInboundActor } from "../telemetry/Inbound.ts"
import { ProxyCallers } from "../proxy/ProxyCallers.ts"
import { CurrentService } from "./CurrentService.ts"
import { withActor } from "./WithActor.ts"

const proxy = (h: HttpApiBuilder.Handlers.FromGroup<typeof ProxyApi>) =>
  Effect.gen(function* () {
    const plane = yield* DataPlane
    const callers = yield* Effect.serviceOption(ProxyCallers)
    const service = yield* CurrentService
    /** The caller authenticated for a proxy endpoint: its next requests may take the fast path. */
    const remember = (request: HttpServerRequest.HttpServerRequest, actor: AuthenticatedActor) => {
      const authorization = request.headers.authorization
      if (callers._tag === "Some" && authorization !== undefined) callers.value.remember(service, authorization, actor)
    }
    // The raw route writes the streamed answer on the Node response itself; the empty response
    // returned afterwards is ignored by the server because the Node response has ended.
    const raw = ({ params, request }: { params: { id: string }; request: HttpServerRequest.HttpServerRequest }) =>
      withActor((actor) => {
        remember(request, actor)
        return Effect.as(
          plane.proxyRaw(
            actor,
            params.id,
            NodeHttpServerRequest.toIncomingMessage(request) as IncomingMessage,
            NodeHttpServerRequest.toServerResponse(request) as ServerResponse
          ),
          HttpServerResponse.empty()
        )
      })
    return h
      .handle("proxy", ({ params, payload, request }) =>
        withActor((actor) => {
          remember(request, actor)
          return plane.proxy(actor, params.id, payload)
        })
      )
      .handleRaw("rawPost", raw)
      .handleRaw("rawGet", raw)
      .handleRaw("rawPut", raw)
      .handleRaw("rawPatch", raw)
      .handleRaw("rawDelete", raw)
  })

/** The proxy group of the api service. */
export const ApiProxyHttp = HttpApiBuilder.group(ApiV1, "proxy", proxy)

/** The proxy group of the admin-api service. */
export const AdminApiProxyHttp = HttpApiBuilder.group(AdminApiV1, "proxy", proxy)

const connectionsPrefix = "/api/v1/connections/"
const rawSuffix = "/_proxy_raw"
const envelopeSuffix = "/_proxy"
const rawMethods: ReadonlySet<string> = new Set(["GET", "POST", "PUT", "PATCH", "DELETE"])
/** An id the router would decode to itself (no percent-encoding, nothing the input guard refuses). */
const plainId = /^[A-Za-z0-9_.~-]{1,200}$/
const decodeEnvelope = Schema.decodeUnknownExit(ProxyRequest, { onExcessProperty: "error" })

/** `application/json`, with parameters or not: what the `_proxy` route decodes as its payload. */
const isJson = (contentType: string | undefined): boolean => {
  if (contentType === undefined) return false
  const semicolon = contentType.indexOf(";")
  return (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase() === "application/json"
}

/** The declared length of a body svc may buffer whole (`maxBodyBytes` at most), or undefined. */
const bufferableLength = (request: IncomingMessage, maxBodyBytes: number): number | undefined => {
  if (request.headers["transfer-encoding"] !== undefined) return undefined
  const declared = request.headers["content-length"]
  if (declared === undefined || !/^\d{1,10}$/.test(declared)) return undefined
  const length = Number(declared)
  return length <= maxBodyBytes ? length : undefined
}

/**
 * `request` again, its body `body` already read: what the HttpApi route reads when the fast path
 * gives a `_proxy` request back after reading its body.
 */
const replayed = (request: IncomingMessage, body: Buffer): IncomingMessage => {
  const replay = new IncomingMessage(request.socket)
  replay.method = request.method
  replay.url = request.url
  replay.httpVersion = request.httpVersion
  replay.httpVersionMajor = request.httpVersionMajor
  replay.httpVersionMinor = request.httpVersionMinor
  replay.headers = request.headers
  replay.rawHeaders = request.rawHeaders
  replay.complete = true
  if (body.byteLength > 0) replay.push(body)
  replay.push(null)
  return replay
}

/**
 * The fast path of `service`'s `server` (docs/performance.md). `_proxy_raw` (exact path, no query)
 * of a remembered caller is offered to `DataPlane.tryFastRaw` at the Node `request` event; when it
 * is taken, the Effect router never sees the request. `_proxy` of a remembered caller to a
 * connection known fresh, with a JSON body of a declared length svc accepts, is read here, checked
 * as the input guard checks it and decoded with the route's schema; any problem (or a declined
 * request) gives the request, body included, back to the router, which answers as always.
 * `observe` runs first on every taken request (the drain's bookkeeping, which the router's
 * listeners would otherwise have run).
 */
export const installFastPath = (
  server: http.Server,
  service: ServiceId,
  plane: DataPlane["Service"],
  callers: ProxyCallers["Service"],
  observe: (request: IncomingMessage, response: ServerResponse) => void,
  maxBodyBytes: number
): void => {
  // The router's own dispatch, kept before the fast path replaces `server.emit` below.
  const emit: (this: http.Server, event: string, ...args: ReadonlyArray<unknown>) => boolean = server.emit
  const route = (request: IncomingMessage, response: ServerResponse) => emit.call(server, "request", request, response)

  const envelope = (
    actor: AuthenticatedActor,
    id: string,
    request: IncomingMessage,
    response: ServerResponse,
    length: number
  ) => {
    const chunks: Array<Buffer> = []
    let size = 0
    request.on("data", (chunk: Buffer) => {
      size += chunk.byteLength
      chunks.push(chunk)
    })
    request.once("error", () => response.destroy())
    request.once("end", () => {
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)
      if (size === length && body.byteLength > 0) {
        let parsed: unknown
        try {
          parsed = JSON.parse(body.toString("utf8"))
        } catch {
          parsed = undefined
        }
        if (parsed !== undefined && jsonProblem(parsed) === undefined) {
          const payload = decodeEnvelope(parsed)
          if (Exit.isSuccess(payload) && plane.tryFastEnvelope(actor, id, payload.value, response)) return
        }
      }
      route(replayed(request, body), response)
    })
  }

  const take = (request: IncomingMessage, response: ServerResponse): boolean => {
    const url = request.url
    if (url === undefined || !url.startsWith(connectionsPrefix)) return false
    const raw = url.endsWith(rawSuffix)
    if (raw) {
      if (!rawMethods.has(request.method ?? "")) return false
    } else if (!url.endsWith(envelopeSuffix) || request.method !== "POST") return false
    const id = url.slice(connectionsPrefix.length, url.length - (raw ? rawSuffix : envelopeSuffix).length)
    if (!plainId.test(id)) return false
    const authorization = request.headers.authorization
    if (authorization === undefined) return false
    const actor = callers.lookup(service, authorization)
    if (actor === undefined) return false
    // The access log names the caller (the router's bearer middleware does it on the slow path;
    // a replayed envelope is a new message, so its original carries the actor).
    if (raw) {
      observe(request, response)
      noteInboundActor(request, actor.id)
      return plane.tryFastRaw(actor, id, request, response)
    }
    if (!isJson(request.headers["content-type"])) return false
    const length = bufferableLength(request, maxBodyBytes)
    if (length === undefined || !plane.knowsFast(actor, id)) return false
    observe(request, response)
    noteInboundActor(request, actor.id)
    envelope(actor, id, request, response, length)
    return true
  }
  server.emit = function (this: http.Server, event: string | symbol, ...args: Array<unknown>): boolean {
    if (event === "request" && take(args[0] as IncomingMessage, args[1] as ServerResponse)) return true
    return emit.apply(this, [event, ...args] as Parameters<typeof emit>)
  } as typeof server.emit
}
