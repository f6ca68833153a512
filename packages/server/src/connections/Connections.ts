/**
 * Connection operations (spec 2.7, 3.1, 4.1; API-CONVENTIONS "Resources"). Server-side creation
 * lands on the connector's primary version, in the connector's namespace or a descendant, for
 * auth methods that need no browser (none, api_key, basic, OAuth2 client credentials). The
 * configuration is validated against the setup schemas (defaults applied) and, like the
 * credentials, stored only encrypted; responses redact secret configuration fields and never
 * carry credentials.
 */
import type { Connection, CreateConnection, UpdateConnection } from "@svc/domain/Connection"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { BadRequest, Conflict, NotFound } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { type ConnectionId, makeId } from "@svc/domain/Ids"
import { namespaceFilterMatches } from "@svc/domain/Resource"
import type { ConnectionRow } from "@svc/sql/Rows"
import { Context, Effect, Layer, Option } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { ConnectionSecrets } from "./ConnectionSecrets.ts"
import { dueAt } from "./UsableCredentials.ts"
import { type CredentialsError, Credentials } from "./Credentials.ts"
import { subjectOf } from "./LimitedCalls.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import { type ListPage, type ListRequest, Listing } from "../resources/Listing.ts"
import * as Present from "../resources/Presenters.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { type ResourceError, ResourceOps } from "../resources/ResourceOps.ts"
import { oauth2LabelsOf } from "./OAuth2Labels.ts"
import { redactConfiguration, validateConfiguration } from "../resources/SetupConfiguration.ts"

/** Errors of operations that may call a provider. */
export type ConnectionError = ResourceError | CredentialsError

/** Connection operations for the HTTP handlers. */
export class Connections extends Context.Service<
  Connections,
  {
    readonly create: (actor: AuthenticatedActor, body: CreateConnection) => Effect.Effect<Connection, ConnectionError>
    readonly list: (actor: AuthenticatedActor, query: ListRequest) => Effect.Effect<ListPage<Connection>, BadRequest>
    readonly get: (actor: AuthenticatedActor, id: ConnectionId) => Effect.Effect<Connection, ResourceError>
    readonly update: (
      actor: AuthenticatedActor,
      id: ConnectionId,
      body: UpdateConnection
    ) => Effect.Effect<Connection, ResourceError>
    /** Replaces the credentials; the id, configuration and state stay. */
    readonly replaceCredentials: (
      actor: AuthenticatedActor,
      id: ConnectionId,
      credentials: unknown
    ) => Effect.Effect<Connection, ConnectionError>
  }
>()("@svc/server/Connections") {
  static readonly layerNoDeps: Layer.Layer<
    Connections,
    never,
    ResourceOps | Listing | ConnectorDefinitions | ConnectionSecrets | Credentials | SvcConfig
  > = Layer.effect(
    Connections,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const listing = yield* Listing
      const definitions = yield* ConnectorDefinitions
      const secrets = yield* ConnectionSecrets
      const credentials = yield* Credentials
      const config = yield* SvcConfig

      const present = (row: ConnectionRow) =>
        Effect.gen(function* () {
          const definition = yield* definitions.get(row.connectorId, row.connectorVersion)
          const configuration = yield* secrets.configuration(row)
          return Present.connection(row, redactConfiguration(definition, configuration))
        })

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
        // Refuse before any provider is called on the caller's behalf.
        yield* ops.authorizeCreate(actor, Kinds.connections, namespace)
        // spec 3.2: only a primary version accepts new connections.
        const primary = yield* definitions.primary(connector.id)
        const definition: ConnectorDefinition = primary.definition
        const setup = yield* validateConfiguration(definition, body.configuration, "body.configuration")
        const identity = { id: makeId("cxn"), namespace }
        const stored = yield* credentials
          .accept(definition, body.credentials, "body.credentials", {
            connectionId: identity.id,
            namespace,
            connectorId: connector.id,
            connectorVersion: primary.version,
            labels: body.labels ?? {},
            actorId: actor.id
          })
          .pipe(oauth2LabelsOf(ops, { connectorId: connector.id, labels: body.labels ?? {} }))
        const configurationEnc = yield* secrets.sealConfiguration(identity, setup.configuration)
        const credentialsEnc = stored === undefined ? null : yield* secrets.sealCredentials(identity, stored)
        const row = yield* ops.create(actor, Kinds.connections, {
          id: identity.id,
          namespace,
          name: body.name,
          labels: body.labels,
          annotations: body.annotations,
          columns: {
            connectorId: connector.id,
            connectorVersion: primary.version,
            // A required configure field is missing: the actor resumes setup from that step (spec 2.7).
            state: setup.setupStepId === null ? "configured" : "setup",
            healthState: "healthy",
            setupStepId: setup.setupStepId,
            configurationEnc,
            credentialsEnc,
            tokenRefreshDueAt:
              stored === undefined ? null : dueAt(definition, stored, config.oauth2.defaultTokenLifetimeMs)
          }
        })
        return yield* present(row)
      })

      const replaceCredentials = Effect.fn("Connections.replaceCredentials")(function* (
        actor: AuthenticatedActor,
        id: ConnectionId,
        input: unknown
      ) {
        const current = yield* ops.load(actor, Kinds.connections, id, "update")
        const definition = yield* definitions.get(current.connectorId, current.connectorVersion)
        if (definition.auth.type === "none") {
          return yield* new BadRequest({
            error: "a connector with auth method none has no credentials to replace",
            code: "credentials_not_accepted"
          })
        }
        const stored = yield* credentials
          .accept(definition, input, "body.credentials", {
            ...subjectOf(current),
            actorId: actor.id
          })
          .pipe(oauth2LabelsOf(ops, subjectOf(current)))
        if (stored === undefined) return yield* Effect.die(new Error("accepted credentials are empty"))
        const credentialsEnc = yield* secrets.sealCredentials(current, stored)
        const tokenRefreshDueAt = dueAt(definition, stored, config.oauth2.defaultTokenLifetimeMs)
        const row = yield* ops.update(
          actor,
          Kinds.connections,
          id,
          { columns: { credentialsEnc, tokenRefreshDueAt } },
          (locked) =>
            // The version decides the auth method: a migration in between must not mix them up.
            locked.connectorVersion === current.connectorVersion
              ? Effect.void
              : Effect.fail(
                  new Conflict({
                    error: `connection ${id} changed version meanwhile; retry`,
                    code: "concurrent_change"
                  })
                )
        )
        return yield* present(row)
      })

      return Connections.of({
        create,
        replaceCredentials,
        list: (actor, query) =>
          listing.listWith(actor, Kinds.connections, query, present, {
            state: "state",
            connectorId: "connectorId"
          }),
        get: (actor, id) => Effect.flatMap(ops.load(actor, Kinds.connections, id, "get"), present),
        update: (actor, id, body) =>
          Effect.flatMap(
            ops.update(actor, Kinds.connections, id, {
              name: body.name,
              labels: body.labels,
              annotations: body.annotations
            }),
            present
          )
      })
    })
  )
}
