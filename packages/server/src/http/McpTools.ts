/**
 * The tools of `POST /mcp` (API-CONVENTIONS "Agent access over MCP"; docs/agents.md):
 * `list_connections`, `describe_connection` and `call_connection`, with JSON-Schema inputs and
 * outputs from their Effect schemas. Each runs as the request's actor with the permissions of the
 * equivalent HTTP call (`connections:list`, `connections:get`, `connections:proxy`); a refusal
 * is a tool error (`isError`) whose text is `{status, code, error, details?}` with the HTTP API's
 * status and code (a rate-limit answer: `rate_limited` with `retry_after_seconds`).
 * `call_connection` goes through the data plane's one exchange (`DataPlane.agentCall`).
 */
import { AgentRule } from "@svc/domain/AgentAccess"
import { agentOrigin } from "@svc/domain/AgentAccess"
import { type ApiError, BadRequest, httpStatusOf, RateLimited } from "@svc/domain/Errors"
import { CurrentActor } from "@svc/domain/http/Security"
import { isConnectionId } from "@svc/domain/Ids"
import { NamespaceFilterParam } from "@svc/domain/Resource"
import { formatSelectorProblem, parseSelector, type Selector } from "@svc/domain/Selector"
import { StrictJson } from "@svc/domain/StrictInput"
import { Effect, Result, Schema } from "effect"
import { Tool, Toolkit } from "effect/ai"
import { Connections } from "../connections/Connections.ts"
import { DataPlane } from "../proxy/DataPlane.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"

/** A refusal as the agent gets it: the HTTP API's status and code. */
export const ToolError = Schema.Struct({
  status: Schema.Number,
  code: Schema.String,
  error: Schema.String,
  details: Schema.optionalKey(Schema.Array(Schema.Struct({ field: Schema.String, message: Schema.String }))),
  retry_after_seconds: Schema.optionalKey(Schema.Number),
  rate_limit_id: Schema.optionalKey(Schema.NullOr(Schema.String))
}).annotate({ identifier: "ToolError" })
export type ToolError = typeof ToolError.Type

/** The tool error of an error of the HTTP API's family (or svc's own 429). */
export const toolError = (error: ApiError | RateLimited): ToolError => {
  if (error instanceof RateLimited) {
    return {
      status: 429,
      code: "rate_limited",
      error: error.error,
      retry_after_seconds: error.retry_after_seconds,
      rate_limit_id: error.rate_limit_id
    }
  }
  const details = error.details
  return {
    status: httpStatusOf(error),
    code: error.code,
    error: error.error,
    ...(details === undefined || details.length === 0 ? {} : { details: details.map((d) => ({ ...d })) })
  }
}

const ConnectionSummary = Schema.Struct({
  id: Schema.String,
  name: Schema.optionalKey(Schema.String),
  namespace: Schema.String,
  connector_id: Schema.String,
  connector_version: Schema.Number,
  state: Schema.String,
  health_state: Schema.String,
  labels: Schema.Record(Schema.String, Schema.String)
})

export const ListConnections = Tool.make("list_connections", {
  description:
    "List the connections this token may see (at most 100). Filter by namespace (a path such as root.acme, " +
    "or root.acme.** for the subtree), label_selector (e.g. env=prod,tier in (gold)) or connector id.",
  parameters: Schema.Struct({
    namespace: Schema.optionalKey(NamespaceFilterParam),
    label_selector: Schema.optionalKey(Schema.String),
    connector: Schema.optionalKey(Schema.String)
  }),
  success: Schema.Struct({ connections: Schema.Array(ConnectionSummary), more: Schema.Boolean }),
  failure: ToolError,
  failureMode: "error",
  dependencies: [CurrentActor]
})
  .annotate(Tool.Readonly, true)
  .annotate(Tool.Title, "List connections")

export const DescribeConnection = Tool.make("describe_connection", {
  description:
    "Describe one connection: its connector, state, health, and the operations an agent may call " +
    "through it with call_connection (methods and path globs; * matches within one path segment).",
  parameters: Schema.Struct({ connection_id: Schema.String }),
  success: Schema.Struct({
    ...ConnectionSummary.fields,
    connector_type: Schema.String,
    display_name: Schema.optionalKey(Schema.String),
    description: Schema.optionalKey(Schema.String),
    base_url: Schema.optionalKey(Schema.String),
    operations: Schema.Array(AgentRule),
    token_operations: Schema.optionalKey(Schema.Array(AgentRule))
  }),
  failure: ToolError,
  failureMode: "error",
  dependencies: [CurrentActor]
})
  .annotate(Tool.Readonly, true)
  .annotate(Tool.Title, "Describe a connection")

export const CallConnection = Tool.make("call_connection", {
  description:
    "Call the connection's API: svc adds the connection's credentials, applies rate limits and records the call. " +
    "Only the operations describe_connection lists are allowed. path is the URL path (e.g. /v1/items); " +
    "query and headers are optional; body is JSON. The answer's body is capped at 64 KiB.",
  parameters: Schema.Struct({
    connection_id: Schema.String,
    method: Schema.String.check(
      Schema.isPattern(/^[A-Za-z]{1,16}$/, { message: "must be an HTTP method such as GET or POST" })
    ),
    path: Schema.String.check(Schema.isMaxLength(4096)),
    query: Schema.optionalKey(Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Array(Schema.String)]))),
    headers: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
    body: Schema.optionalKey(StrictJson)
  }),
  success: Schema.Struct({
    status: Schema.Number,
    headers: Schema.Record(Schema.String, Schema.String),
    json: Schema.optionalKey(Schema.Json),
    text: Schema.optionalKey(Schema.String),
    size: Schema.Number,
    truncated: Schema.Boolean
  }),
  failure: ToolError,
  failureMode: "error",
  dependencies: [CurrentActor]
})
  .annotate(Tool.OpenWorld, true)
  .annotate(Tool.Title, "Call a connection")

export const AgentTools = Toolkit.make(ListConnections, DescribeConnection, CallConnection)

const invalid = (field: string, message: string) =>
  new BadRequest({ error: `invalid ${field}`, code: "invalid_request", details: [{ field, message }] })

const notFound = (id: string) => ({ status: 404, code: "not_found", error: `connection ${id} not found` })

/** The handlers of `AgentTools`. */
export const AgentToolHandlers = AgentTools.toLayer(
  Effect.gen(function* () {
    const connections = yield* Connections
    const definitions = yield* ConnectorDefinitions
    const plane = yield* DataPlane
    return AgentTools.of({
      list_connections: (params) =>
        Effect.gen(function* () {
          const actor = yield* CurrentActor
          let labelSelector: Selector | undefined
          if (params.label_selector !== undefined) {
            const parsed = parseSelector(params.label_selector)
            if (Result.isFailure(parsed)) {
              return yield* invalid("label_selector", parsed.failure.map(formatSelectorProblem).join("; "))
            }
            labelSelector = parsed.success
          }
          const page = yield* connections.list(actor, {
            limit: 100,
            ...(params.namespace === undefined ? {} : { namespace: params.namespace }),
            ...(labelSelector === undefined ? {} : { labelSelector }),
            equals: { connectorId: params.connector }
          })
          return {
            connections: page.items.map((c) => ({
              id: c.id,
              ...(c.name === undefined ? {} : { name: c.name }),
              namespace: c.namespace,
              connector_id: c.connectorId,
              connector_version: c.connectorVersion,
              state: c.state,
              health_state: c.healthState,
              labels: { ...c.labels }
            })),
            more: page.cursor !== undefined
          }
        }).pipe(Effect.mapError(toolError)),
      describe_connection: ({ connection_id: id }) =>
        Effect.gen(function* () {
          const actor = yield* CurrentActor
          if (!isConnectionId(id)) return yield* Effect.fail(notFound(id))
          const c = yield* Effect.mapError(connections.get(actor, id), toolError)
          const definition = yield* definitions.get(c.connectorId, c.connectorVersion)
          const access = definition.agent_access
          const origin = access === undefined ? undefined : agentOrigin(access, definition.proxy.allowed_hosts)
          return {
            id: c.id,
            ...(c.name === undefined ? {} : { name: c.name }),
            namespace: c.namespace,
            connector_id: c.connectorId,
            connector_version: c.connectorVersion,
            state: c.state,
            health_state: c.healthState,
            labels: { ...c.labels },
            connector_type: definition.type,
            ...(definition.display_name === undefined ? {} : { display_name: definition.display_name }),
            ...(definition.description === undefined ? {} : { description: definition.description }),
            ...(origin === undefined ? {} : { base_url: origin }),
            operations: origin === undefined ? [] : (access?.allow ?? []),
            ...(actor.agentAccess?.allow === undefined ? {} : { token_operations: actor.agentAccess.allow })
          }
        }),
      call_connection: ({ connection_id, ...call }) =>
        Effect.gen(function* () {
          const actor = yield* CurrentActor
          return yield* plane.agentCall(actor, connection_id, call)
        }).pipe(Effect.mapError(toolError))
    })
  })
)
