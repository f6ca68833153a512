/**
 * Decoded connector definitions by (connector, version), cached in process: a version's document
 * never changes once written, so the cache needs no invalidation.
 */
import { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { Conflict } from "@svc/domain/Errors"
import type { ConnectorId } from "@svc/domain/Ids"
import { ConnectorRepo } from "@svc/sql/ConnectorRepo"
import { Context, Effect, Layer, Option, Schema } from "effect"

const decode = Schema.decodeUnknownEffect(ConnectorDefinition)
const maxEntries = 4096

/** Read access to stored definitions. */
export class ConnectorDefinitions extends Context.Service<
  ConnectorDefinitions,
  {
    /** The definition of one version; a missing version or undecodable document is a defect. */
    readonly get: (connectorId: ConnectorId, version: number) => Effect.Effect<ConnectorDefinition>
    /** The primary version and its definition: the one new connections land on (spec 3.2); 409 when none. */
    readonly primary: (
      connectorId: ConnectorId
    ) => Effect.Effect<{ readonly version: number; readonly definition: ConnectorDefinition }, Conflict>
  }
>()("@svc/server/ConnectorDefinitions") {
  static readonly layerNoDeps: Layer.Layer<ConnectorDefinitions, never, ConnectorRepo> = Layer.effect(
    ConnectorDefinitions,
    Effect.gen(function* () {
      const repo = yield* ConnectorRepo
      const cache = new Map<string, ConnectorDefinition>()
      const get = Effect.fnUntraced(function* (connectorId: ConnectorId, version: number) {
        const key = `${connectorId}\u0000${version}`
        const hit = cache.get(key)
        if (hit !== undefined) return hit
        const row = yield* Effect.orDie(repo.version(connectorId, version))
        if (Option.isNone(row))
          return yield* Effect.die(new Error(`connector ${connectorId} has no version ${version}`))
        const definition = yield* Effect.orDie(decode(row.value.definition))
        if (cache.size >= maxEntries) cache.delete(cache.keys().next().value as string)
        cache.set(key, definition)
        return definition
      })
      const primary = Effect.fnUntraced(function* (connectorId: ConnectorId) {
        const versions = yield* Effect.orDie(repo.versions(connectorId))
        const found = versions.find((version) => version.state === "primary")
        if (found === undefined) {
          return yield* new Conflict({
            error: `connector ${connectorId} has no primary version`,
            code: "no_primary_version"
          })
        }
        return { version: found.version, definition: yield* get(connectorId, found.version) }
      })
      return ConnectorDefinitions.of({ get, primary })
    })
  )
}
