/**
 * Connector operations (spec 2.1, 2.2 rule 6, 3.2): one logical connector with integer versions;
 * publishing a primary demotes the previous primary to `active`.
 */
import type {
  Connector,
  ConnectorVersion,
  CreateConnector,
  DefinitionDocument,
  SetVersionState,
  UpdateConnector
} from "@svc/domain/Connector"
import { type BadRequest, Conflict, NotFound } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { type ConnectorId, makeId } from "@svc/domain/Ids"
import { ConnectorRepo } from "@svc/sql/ConnectorRepo"
import { ResourceRepo } from "@svc/sql/ResourceRepo"
import { Context, DateTime, Effect, Layer, Option } from "effect"
import { ConnectorDefinitions } from "./ConnectorDefinitions.ts"
import { DefinitionValidator } from "./DefinitionValidator.ts"
import { type ListPage, type ListRequest, Listing } from "./Listing.ts"
import * as Present from "./Presenters.ts"
import * as Kinds from "./ResourceKinds.ts"
import { orDie, type ResourceError, ResourceOps } from "./ResourceOps.ts"

const allowedFrom: Record<SetVersionState["state"], ReadonlyArray<string>> = {
  primary: ["draft", "active"],
  active: ["primary"],
  archived: ["draft", "active"]
}

/** Connector CRUD and version lifecycle for the HTTP handlers. */
export class Connectors extends Context.Service<
  Connectors,
  {
    readonly create: (actor: AuthenticatedActor, body: CreateConnector) => Effect.Effect<Connector, ResourceError>
    readonly list: (actor: AuthenticatedActor, query: ListRequest) => Effect.Effect<ListPage<Connector>, BadRequest>
    readonly get: (actor: AuthenticatedActor, id: ConnectorId) => Effect.Effect<Connector, ResourceError>
    readonly update: (
      actor: AuthenticatedActor,
      id: ConnectorId,
      body: UpdateConnector
    ) => Effect.Effect<Connector, ResourceError>
    readonly createVersion: (
      actor: AuthenticatedActor,
      id: ConnectorId,
      definition: DefinitionDocument
    ) => Effect.Effect<ConnectorVersion, ResourceError>
    readonly versions: (
      actor: AuthenticatedActor,
      id: ConnectorId
    ) => Effect.Effect<{ items: ReadonlyArray<ConnectorVersion> }, ResourceError>
    readonly version: (
      actor: AuthenticatedActor,
      id: ConnectorId,
      version: number
    ) => Effect.Effect<ConnectorVersion, ResourceError>
    readonly setVersionState: (
      actor: AuthenticatedActor,
      id: ConnectorId,
      version: number,
      state: SetVersionState["state"]
    ) => Effect.Effect<ConnectorVersion, ResourceError>
  }
>()("@svc/server/Connectors") {
  static readonly layerNoDeps: Layer.Layer<
    Connectors,
    never,
    ResourceOps | Listing | ConnectorRepo | ResourceRepo | DefinitionValidator | ConnectorDefinitions
  > = Layer.effect(
    Connectors,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const listing = yield* Listing
      const connectorRepo = yield* ConnectorRepo
      const repo = yield* ResourceRepo
      const validator = yield* DefinitionValidator
      const definitions = yield* ConnectorDefinitions
      const now = Effect.map(DateTime.now, (n) => new Date(DateTime.toEpochMillis(n)))

      const create = Effect.fn("Connectors.create")(function* (actor: AuthenticatedActor, body: CreateConnector) {
        const definition = yield* validator.validate(body.definition)
        const id = makeId("cxr")
        const at = yield* now
        const row = yield* ops.create(actor, Kinds.connectors, {
          id,
          namespace: body.namespace,
          name: body.name,
          labels: body.labels,
          annotations: body.annotations,
          columns: { state: "draft", version: 1, type: definition.type },
          afterInsert: Effect.asVoid(connectorRepo.insertVersion(id, definition, at))
        })
        return Present.connector(row)
      })

      // The current version's type is the connector's `svc/cxr/type` label: re-materialise it.
      const relabel = (actor: AuthenticatedActor, id: ConnectorId) =>
        Effect.asVoid(ops.update(actor, Kinds.connectors, id, {}))

      const missingVersion = (id: ConnectorId, version: number) =>
        new NotFound({ error: `connector ${id} has no version ${version}`, code: "not_found" })

      const createVersion = Effect.fn("Connectors.createVersion")(function* (
        actor: AuthenticatedActor,
        id: ConnectorId,
        document: DefinitionDocument
      ) {
        yield* ops.load(actor, Kinds.connectors, id, "update")
        const definition = yield* validator.validate(document)
        const at = yield* now
        const row = yield* Effect.orDie(
          repo.withTransaction(
            Effect.gen(function* () {
              const created = yield* connectorRepo.insertVersion(id, definition, at)
              yield* connectorRepo.refreshCurrent(id, at)
              return created
            })
          )
        )
        yield* relabel(actor, id)
        return Present.connectorVersion(row)
      })

      const setVersionState = Effect.fn("Connectors.setVersionState")(function* (
        actor: AuthenticatedActor,
        id: ConnectorId,
        version: number,
        state: SetVersionState["state"]
      ) {
        yield* ops.load(actor, Kinds.connectors, id, "update")
        const at = yield* now
        const row = yield* orDie(
          repo.withTransaction(
            Effect.gen(function* () {
              const current = yield* connectorRepo.version(id, version, { forUpdate: true })
              if (Option.isNone(current)) return yield* missingVersion(id, version)
              if (current.value.state === state) return current.value
              if (!allowedFrom[state].includes(current.value.state)) {
                return yield* new Conflict({
                  error: `version ${version} is ${current.value.state} and cannot become ${state}`,
                  code: "invalid_state_transition"
                })
              }
              if (state === "archived" && (yield* connectorRepo.connectionsOn(id, version)) > 0) {
                return yield* new Conflict({
                  error: `version ${version} still has live connections`,
                  code: "version_in_use"
                })
              }
              yield* connectorRepo.setState(id, version, state, at)
              yield* connectorRepo.refreshCurrent(id, at)
              const updated = yield* connectorRepo.version(id, version)
              return Option.getOrThrow(updated)
            })
          )
        )
        yield* relabel(actor, id)
        return Present.connectorVersion(row)
      })

      /** The connector with its current version's display name, description and logo (cached definitions). */
      const displayed = (connector: Connector) =>
        Effect.map(definitions.get(connector.id, connector.version), (definition) =>
          Present.withDisplay(connector, definition)
        )

      return Connectors.of({
        create,
        list: (actor, query) =>
          listing.listWith(actor, Kinds.connectors, query, (row) => displayed(Present.connector(row)), {
            state: "state",
            type: "type"
          }),
        get: (actor, id) =>
          Effect.flatMap(ops.load(actor, Kinds.connectors, id, "get"), (row) => displayed(Present.connector(row))),
        update: (actor, id, body) =>
          Effect.map(
            ops.update(actor, Kinds.connectors, id, {
              name: body.name,
              labels: body.labels,
              annotations: body.annotations
            }),
            Present.connector
          ),
        createVersion,
        versions: (actor, id) =>
          Effect.gen(function* () {
            yield* ops.load(actor, Kinds.connectors, id, "get")
            const rows = yield* Effect.orDie(connectorRepo.versions(id))
            return { items: rows.map(Present.connectorVersion) }
          }),
        version: (actor, id, version) =>
          Effect.gen(function* () {
            yield* ops.load(actor, Kinds.connectors, id, "get")
            const row = yield* Effect.orDie(connectorRepo.version(id, version))
            if (Option.isNone(row)) return yield* missingVersion(id, version)
            return Present.connectorVersion(row.value)
          }),
        setVersionState
      })
    })
  )
}
