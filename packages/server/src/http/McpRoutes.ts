/**
 * `POST /mcp` on the api service (API-CONVENTIONS "Agent access over MCP"; docs/agents.md):
 * effect's `McpServer` over Streamable HTTP, mounted on the api's router next to its HttpApi.
 *
 * Every request is authenticated before the MCP server sees it, like every api route: the bearer
 * actor JWT (`Authenticator.authenticateAgent`, which also takes tokens with an `agent_access`
 * claim — accepted nowhere else) becomes the request's `CurrentActor`, the one the tools act as;
 * a missing or invalid token answers 401 with the standard body and `WWW-Authenticate: Bearer`.
 *
 * Protocol revisions: 2025-11-25, 2025-06-18 and 2025-03-26 (sessionful: `initialize` returns an
 * `Mcp-Session-Id`, kept in this process; a client ends it with `DELETE /mcp`) and 2026-07-28
 * (sessionless). Sessions hold no authority: each request is authenticated on its own. They are
 * bounded (`McpSessions.ts`): idle ones expire, the least recently used beyond the cap are
 * evicted, and a session answers only the actor that opened it.
 */
import type { IncomingMessage } from "node:http"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Unauthorized } from "@svc/domain/Errors"
import { CurrentActor } from "@svc/domain/http/Security"
import { Clock, Context, Duration, Effect, Layer, Schedule } from "effect"
import { McpProtocol, McpServer } from "effect/ai"
import { HttpEffect, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Authenticator } from "../auth/Authenticator.ts"
import { SvcConfig } from "../config/SvcConfig.ts"
import { version } from "../config/Version.ts"
import { noteInboundActor } from "../telemetry/Inbound.ts"
import { CurrentService } from "./CurrentService.ts"
import { errorResponse } from "./ErrorHandling.ts"
import { McpSessionTable } from "./McpSessions.ts"
import { AgentToolHandlers, AgentTools } from "./McpTools.ts"

/** Where the api serves MCP. */
export const mcpPath = "/mcp"

const challenge = (response: HttpServerResponse.HttpServerResponse) =>
  HttpServerResponse.setHeader(response, "www-authenticate", 'Bearer realm="svc"')

const unauthorized = (error: string, code: string) => challenge(errorResponse(401, error, code))

const sessionHeader = "mcp-session-id"

/** The api's MCP sessions and how to end one in effect's runtime (as `DELETE /mcp` would). */
class McpSessions extends Context.Service<
  McpSessions,
  { readonly table: McpSessionTable; readonly end: (ids: ReadonlyArray<string>) => Effect.Effect<void> }
>()("svc/server/McpSessions") {}

/** Effect's answer to a request naming no session it knows (MCP: the client re-initialises). */
const unknownSession = () => HttpServerResponse.empty({ status: 404 })

/**
 * The session bookkeeping around one authenticated request: expired sessions ended first, a
 * session named by another actor refused as unknown, the session in use while the request runs,
 * a session `initialize` opened recorded (evicting beyond the cap), one `DELETE` ends forgotten.
 */
const withSession = <E, R>(
  { table, end }: McpSessions["Service"],
  httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  request: HttpServerRequest.HttpServerRequest,
  actorId: string
) =>
  Effect.gen(function* () {
    yield* end(table.expire(yield* Clock.currentTimeMillis))
    const id = request.headers[sessionHeader]
    if (id === undefined) {
      const response = yield* httpEffect
      // Appended after effect's own pre-response handler, which sets a new session's id.
      yield* HttpEffect.appendPreResponseHandler((_request, response) =>
        Effect.gen(function* () {
          const opened = response.headers[sessionHeader]
          if (opened !== undefined && response.status === 200) {
            yield* end(table.open(opened, actorId, yield* Clock.currentTimeMillis))
          }
          return response
        })
      ).pipe(Effect.provideService(HttpServerRequest.HttpServerRequest, request))
      return response
    }
    const lookup = table.begin(id, actorId, yield* Clock.currentTimeMillis)
    if (lookup === "foreign") return unknownSession()
    // A session this process did not open for an actor (or already ended) is not passed on:
    // the owner check above must hold for every session effect keeps.
    if (lookup === "unknown") return unknownSession()
    if (request.method === "DELETE") table.close(id)
    return yield* httpEffect.pipe(
      Effect.ensuring(Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => table.end(id, now))))
    )
  })

/** The bearer check of `/mcp`: the actor for the tools, or the 401/503 every api route answers. */
const McpAuthentication = HttpRouter.middleware<{ provides: CurrentActor }>()(
  Effect.gen(function* () {
    const authenticator = yield* Authenticator
    const service = yield* CurrentService
    const sessions = yield* McpSessions
    return (httpEffect) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const header = request.headers.authorization ?? ""
        const token = header.toLowerCase().startsWith("bearer ") ? header.slice(7).trim() : ""
        if (token === "") return unauthorized("a bearer token is required", "unauthorized")
        const actor = yield* Effect.result(authenticator.authenticateAgent(token, service))
        if (actor._tag === "Failure") {
          const failure = actor.failure
          return failure instanceof Unauthorized
            ? unauthorized(failure.error, failure.code)
            : errorResponse(503, failure.error, failure.code)
        }
        // The access log names the caller, as for every api route.
        noteInboundActor(NodeHttpServerRequest.toIncomingMessage(request) as IncomingMessage, actor.success.id)
        return yield* Effect.provideService(
          withSession(sessions, httpEffect, request, actor.success.id),
          CurrentActor,
          actor.success
        )
      })
  })
)

const mcpServer = McpServer.layerHttp({
  name: "svc",
  version,
  instructions:
    "svc holds the credentials of the connections you can see. list_connections finds them, " +
    "describe_connection lists what you may call, call_connection calls it.",
  path: mcpPath,
  protocols: [McpProtocol.v2025_11_25, McpProtocol.v2025_06_18, McpProtocol.v2025_03_26, McpProtocol.v2026_07_28],
  allowSessionTermination: true,
  registrations: McpServer.toolkit(AgentTools).pipe(Layer.provide(AgentToolHandlers))
}).pipe(
  Layer.provide(McpAuthentication.layer),
  // A protocol list the runtime refuses is a programming error, found by every test that starts the api.
  Layer.orDie
)

type DeleteHandler = (
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<HttpServerResponse.HttpServerResponse>

/**
 * The router `layerHttp` registers on, keeping the handler of `DELETE /mcp` (effect's session
 * termination, before any middleware) so that svc can end a session as a client's DELETE would.
 */
const capturingRouter = (router: HttpRouter.HttpRouter, keep: (handler: DeleteHandler) => void) =>
  HttpRouter.HttpRouter.of({
    ...router,
    add: (method, path, handler, options) => {
      if (method === "DELETE" && path === mcpPath && typeof handler === "function") keep(handler as DeleteHandler)
      return router.add(method, path, handler, options)
    }
  })

/** The MCP endpoint of the api service: its routes on the api's router, nothing else exposed. */
export const McpRoutes = Layer.effectDiscard(
  Effect.gen(function* () {
    const limits = (yield* SvcConfig).mcp
    const table = new McpSessionTable(limits)
    let terminate: DeleteHandler | undefined
    const end = (ids: ReadonlyArray<string>) =>
      Effect.forEach(
        ids,
        (id) =>
          terminate === undefined
            ? Effect.void
            : Effect.ignore(
                terminate(
                  HttpServerRequest.fromWeb(
                    new Request(`http://svc.invalid${mcpPath}`, { method: "DELETE", headers: { [sessionHeader]: id } })
                  )
                )
              ),
        { discard: true }
      )
    const router = yield* HttpRouter.HttpRouter
    yield* Layer.build(mcpServer).pipe(
      Effect.provideService(
        HttpRouter.HttpRouter,
        capturingRouter(router, (handler) => {
          terminate = handler
        })
      ),
      Effect.provideService(McpSessions, { table, end })
    )
    // Without it sessions could not be ended: a change in effect's McpServer, found at start.
    if (terminate === undefined) return yield* Effect.die(new Error("McpServer registered no DELETE handler"))
    // Idle sessions also end while no request comes.
    const every = Duration.millis(Math.min(60_000, Math.max(1000, limits.idleTimeoutMs / 2)))
    yield* Effect.forkScoped(
      Effect.repeat(
        Effect.flatMap(Clock.currentTimeMillis, (now) => end(table.expire(now))),
        Schedule.spaced(every)
      )
    )
  })
)
