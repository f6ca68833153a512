/**
 * What a proxied request needs of its connection, served from an in-process cache so a warm
 * request runs no SQL (ARCHITECTURE "request path" steps 2 and 6): the row, its connector
 * version's definition, the decrypted credentials and the outbound options. Entries live 5 s
 * (another process's write is seen within that), writes in this process evict at once
 * (`ConnectionChanges`), and an OAuth2 token due for refresh is refreshed on load (`TokenRefresher`).
 */
import type { StoredCredentials } from "@svc/domain/ConnectorAuth"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { Conflict, Forbidden, NotFound } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import type { ConnectionRow } from "@svc/sql/Rows"
import { Cache, Context, Duration, Effect, Exit, Layer, Option } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { upstreamOptions } from "../outbound/OutboundOptions.ts"
import { TokenRefresher } from "../connections/TokenRefresher.ts"
import { ConnectionChanges } from "../resources/ConnectionChanges.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"
import { type InjectionPlaces, redactionTargets } from "../outbound/CredentialInjection.ts"
import type { SendOptions } from "../outbound/Outbound.ts"

/** A connection ready to carry proxied requests. */
export interface ProxyTarget {
  readonly row: ConnectionRow
  readonly definition: ConnectorDefinition
  readonly credentials: StoredCredentials | undefined
  /** Allowed hosts, private-network policy and timeouts of the connector. */
  readonly send: SendOptions
  /** Where the auth method puts credentials (what recordings redact). */
  readonly redact: InjectionPlaces
}

/** Failures of resolving a proxy target. */
export type TargetError = NotFound | Forbidden | Conflict

/** How long a resolved target is reused. */
export const targetTtl = Duration.seconds(5)

export class ProxyTargets extends Context.Service<
  ProxyTargets,
  {
    /** The target of connection `id` if `actor` may proxy through it; 404/403 otherwise, 409 unless configured. */
    readonly get: (actor: AuthenticatedActor, id: string) => Effect.Effect<ProxyTarget, TargetError>
    /** Drops the cached entry of connection `id`. */
    readonly invalidate: (id: string) => Effect.Effect<void>
    /**
     * After the upstream answered 401 to `target`'s credentials: the target with new credentials
     * (someone else's refresh, or one refresh now, single flight), its cache entry dropped; undefined
     * when no refresh was possible or it failed (the 401 stands).
     */
    readonly afterUnauthorized: (target: ProxyTarget) => Effect.Effect<ProxyTarget | undefined>
  }
>()("@svc/server/ProxyTargets") {
  static readonly layerNoDeps: Layer.Layer<
    ProxyTargets,
    never,
    ResourceOps | ConnectorDefinitions | TokenRefresher | ConnectionChanges | SvcConfig
  > = Layer.effect(
    ProxyTargets,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const definitions = yield* ConnectorDefinitions
      const refresher = yield* TokenRefresher
      const changes = yield* ConnectionChanges
      const config = yield* SvcConfig
      const allowPrivate = config.outbound.allowPrivateNetworks

      const load = (id: string) =>
        Effect.gen(function* () {
          const found = yield* ops.find(Kinds.connections, id)
          if (Option.isNone(found)) return Option.none<ProxyTarget>()
          const row = found.value
          const definition = yield* definitions.get(row.connectorId, row.connectorVersion)
          const target: ProxyTarget = {
            row,
            definition,
            // A failed refresh keeps the old token and lets the upstream decide.
            credentials: row.state === "configured" ? yield* refresher.usable(row, definition) : undefined,
            send: upstreamOptions(definition, allowPrivate),
            redact: redactionTargets(definition.auth)
          }
          return Option.some(target)
        })

      const cache = yield* Cache.makeWith(load, {
        capacity: 10_000,
        timeToLive: (exit) => (Exit.isSuccess(exit) ? targetTtl : Duration.zero)
      })
      changes.onChange((id) => {
        // Eviction is synchronous bookkeeping; run it detached from the writer's fiber.
        Effect.runFork(Cache.invalidate(cache, id))
      })

      const notFound = (id: string) => new NotFound({ error: `connection ${id} not found`, code: "not_found" })

      const get = (actor: AuthenticatedActor, id: string) =>
        Effect.flatMap(Cache.get(cache, id), (found): Effect.Effect<ProxyTarget, TargetError> => {
          if (Option.isNone(found)) return Effect.fail(notFound(id))
          const target = found.value
          const namespace = target.row.namespace
          if (!ops.allowed(actor, Kinds.connections, "proxy", namespace, id)) {
            const visible =
              ops.allowed(actor, Kinds.connections, "get", namespace, id) ||
              ops.allowed(actor, Kinds.connections, "list", namespace, id)
            return Effect.fail(
              visible
                ? new Forbidden({ error: "permission connections:proxy is required", code: "forbidden" })
                : notFound(id)
            )
          }
          if (target.row.state !== "configured") {
            return Effect.fail(
              new Conflict({
                error: `connection ${id} is ${target.row.state}; only a configured connection carries requests`,
                code: "connection_not_configured"
              })
            )
          }
          return Effect.succeed(target)
        })

      const afterUnauthorized = (target: ProxyTarget) =>
        Effect.gen(function* () {
          const renewed = yield* refresher.afterUnauthorized(target.row, target.definition, target.credentials)
          if (renewed === undefined) return undefined
          yield* Cache.invalidate(cache, target.row.id)
          return { ...target, credentials: renewed }
        })

      return ProxyTargets.of({ get, invalidate: (id) => Cache.invalidate(cache, id), afterUnauthorized })
    })
  )
}
