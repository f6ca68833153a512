/**
 * Connection operations (spec 2.7, 3.1, 4.1). Server-side creation lands on the connector's
 * primary version, in the connector's namespace or a descendant; this release creates
 * connections for connectors whose auth method is `none`.
 */
import type { Connection, CreateConnection, UpdateConnection } from "@svc/domain/Connection"
import { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { BadRequest, Conflict, NotFound } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { makeId } from "@svc/domain/Ids"
import { namespaceFilterMatches } from "@svc/domain/Resource"
import { ConnectorRepo } from "@svc/sql/ConnectorRepo"
import { jsonb } from "@svc/sql/ResourceRepo"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { type ListPage, type ListRequest, Listing } from "./Listing.ts"
import * as Present from "./Presenters.ts"
import * as Kinds from "./ResourceKinds.ts"
import { type ResourceError, ResourceOps } from "./ResourceOps.ts"

const decodeDefinition = Schema.decodeUnknownSync(ConnectorDefinition)

/** Connection CRUD for the HTTP handlers. */
export class Connections extends Context.Service<
  Connections,
  {
    readonly create: (actor: AuthenticatedActor, body: CreateConnection) => Effect.Effect<Connection, ResourceError>
    readonly list: (actor: AuthenticatedActor, query: ListRequest) => Effect.Effect<ListPage<Connection>, BadRequest>
    readonly get: (actor: AuthenticatedActor, id: string) => Effect.Effect<Connection, ResourceError>
    readonly update: (
      actor: AuthenticatedActor,
      id: string,
      body: UpdateConnection
    ) => Effect.Effect<Connection, ResourceError>
  }
>()("@svc/server/Connections") {
  static readonly layer: Layer.Layer<Connections, never, ResourceOps | Listing | ConnectorRepo> = Layer.effect(
    Connections,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const listing = yield* Listing
      const connectorRepo = yield* ConnectorRepo

      const create = Effect.fn("Connections.create")(function* (actor: AuthenticatedActor, body: CreateConnection) {
        const found = yield* ops.find(Kinds.connectors, body.connectorId)
        const unknownConnector = new NotFound({ error: `connector ${body.connectorId} not found`, code: "not_found" })
        if (Option.isNone(found)) return yield* unknownConnector
        const connector = found.value
        const namespace = body.namespace ?? connector.namespace
        const inside = namespaceFilterMatches({ path: connector.namespace, subtree: true }, namespace)
        // A connector the caller cannot see stays invisible unless it serves the target namespace.
        if (!inside && !ops.allowed(actor, Kinds.connectors, "get", connector.namespace, connector.id)) {
          return yield* unknownConnector
        }
        if (!inside) {
          return yield* new BadRequest({
            error: `a connection of connector ${connector.id} must be in ${connector.namespace} or below`,
            code: "namespace_outside_connector"
          })
        }
        const versions = yield* Effect.orDie(connectorRepo.versions(connector.id))
        const primary = versions.find((version) => version.state === "primary")
        // spec 3.2: only a primary version accepts new connections.
        if (primary === undefined) {
          return yield* new Conflict({
            error: `connector ${connector.id} has no primary version`,
            code: "no_primary_version"
          })
        }
        const definition = decodeDefinition(primary.definition)
        if (definition.auth.type !== "none") {
          return yield* new BadRequest({
            error: `server-side creation of ${definition.auth.type} connections is not available in this release`,
            code: "auth_method_unsupported"
          })
        }
        if (body.credentials !== undefined) {
          return yield* new BadRequest({
            error: "a connector with auth method none takes no credentials",
            code: "credentials_not_accepted",
            details: [{ field: "body.credentials", message: "not accepted for auth method none" }]
          })
        }
        const row = yield* ops.create(actor, Kinds.connections, {
          id: makeId("cxn"),
          namespace,
          name: body.name,
          labels: body.labels,
          annotations: body.annotations,
          columns: {
            connectorId: connector.id,
            connectorVersion: primary.version,
            state: "configured",
            healthState: "healthy",
            setupStepId: null,
            configuration: jsonb(body.configuration ?? {})
          }
        })
        return Present.connection(row)
      })

      return Connections.of({
        create,
        list: (actor, query) =>
          listing.list(actor, Kinds.connections, query, Present.connection, {
            state: "state",
            connectorId: "connectorId"
          }),
        get: (actor, id) => Effect.map(ops.load(actor, Kinds.connections, id, "get"), Present.connection),
        update: (actor, id, body) =>
          Effect.map(
            ops.update(actor, Kinds.connections, id, {
              name: body.name,
              labels: body.labels,
              annotations: body.annotations
            }),
            Present.connection
          )
      })
    })
  )
}
