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
 * (sessionless). Sessions hold no authority: each request is authenticated on its own.
 */
import type { IncomingMessage } from "node:http"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Unauthorized } from "@svc/domain/Errors"
import { CurrentActor } from "@svc/domain/http/Security"
import { Effect, Layer } from "effect"
import { McpProtocol, McpServer } from "effect/ai"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { Authenticator } from "../auth/Authenticator.ts"
import { noteInboundActor } from "../telemetry/Inbound.ts"
import { CurrentService } from "./CurrentService.ts"
import { errorResponse } from "./ErrorHandling.ts"
import { AgentToolHandlers, AgentTools } from "./McpTools.ts"

/** Where the api serves MCP. */
export const mcpPath = "/mcp"

const challenge = (response: HttpServerResponse.HttpServerResponse) =>
  HttpServerResponse.setHeader(response, "www-authenticate", 'Bearer realm="svc"')

const unauthorized = (error: string, code: string) => challenge(errorResponse(401, error, code))

/** The bearer check of `/mcp`: the actor for the tools, or the 401/503 every api route answers. */
const McpAuthentication = HttpRouter.middleware<{ provides: CurrentActor }>()(
  Effect.gen(function* () {
    const authenticator = yield* Authenticator
    const service = yield* CurrentService
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
        return yield* Effect.provideService(httpEffect, CurrentActor, actor.success)
      })
  })
)

const mcpServer = McpServer.layerHttp({
  name: "svc",
  version: "1.0.0",
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

/** The MCP endpoint of the api service: its routes on the api's router, nothing else exposed. */
export const McpRoutes = Layer.effectDiscard(Layer.build(mcpServer))
