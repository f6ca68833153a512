/**
 * Disconnecting one connection (spec 3.1): it goes `disconnecting`, its OAuth2 tokens are revoked
 * at the provider (RFC 7009; the refresh token first, then the access token, when the connector
 * names a `revocation_endpoint`), its credentials are erased and it is soft-deleted as
 * `disconnected`. A failed revocation never stops the disconnect: it is logged (spec 3.1 "the
 * third-party token revocation may have failed"), never with a token. The work runs in durable
 * tasks (`worker/LifecycleLive.ts`).
 */
import type { RevocationKind, RevocationOutcome } from "@svc/domain/ConnectionSetup"
import type { StoredCredentials } from "@svc/domain/ConnectorAuth"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import type { ConnectionRow } from "@svc/sql/Rows"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { ConnectionSecrets } from "./ConnectionSecrets.ts"
import { LimitedCalls, subjectOf } from "./LimitedCalls.ts"
import { oauth2LabelsOf } from "./OAuth2Labels.ts"
import { OAuthClient } from "./OAuthClient.ts"
import { endpointOptions } from "../outbound/OutboundOptions.ts"
import type { OAuth2Client } from "../oauth/ClientAuth.ts"
import { revokeToken } from "../oauth/Revocation.ts"
import { Outbound } from "../outbound/Outbound.ts"
import { ConnectionChanges } from "../resources/ConnectionChanges.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"

/** Disconnects connections. */
export class ConnectionDisconnect extends Context.Service<
  ConnectionDisconnect,
  {
    /**
     * Disconnects connection `id` (the work of a `_disconnect` task or a disconnect-all's child;
     * the caller checked permissions): `gone` when it is already deleted or disconnected (a re-run
     * does nothing).
     */
    readonly disconnectById: (id: string) => Effect.Effect<"disconnected" | "gone">
  }
>()("@svc/server/ConnectionDisconnect") {
  static readonly layerNoDeps: Layer.Layer<
    ConnectionDisconnect,
    never,
    | ResourceOps
    | ConnectorDefinitions
    | ConnectionSecrets
    | ConnectionRepo
    | ConnectionChanges
    | OAuthClient
    | Outbound
    | LimitedCalls
    | SvcConfig
  > = Layer.effect(
    ConnectionDisconnect,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const definitions = yield* ConnectorDefinitions
      const secrets = yield* ConnectionSecrets
      const repo = yield* ConnectionRepo
      const changes = yield* ConnectionChanges
      const clients = yield* OAuthClient
      const outbound = yield* Outbound
      const calls = yield* LimitedCalls
      const config = yield* SvcConfig
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      /** The client that revokes: the connector's (auth code) or the connection's own (client credentials). */
      const revokingClient = (definition: ConnectorDefinition, stored: StoredCredentials) =>
        stored.kind === "oauth2_client_credentials"
          ? Effect.succeed<OAuth2Client | undefined>({
              client_id: stored.client_id,
              ...(stored.client_secret === undefined ? {} : { client_secret: stored.client_secret })
            })
          : definition.auth.type !== "oauth2" || definition.auth.grant_type !== "authorization_code"
            ? Effect.succeed<OAuth2Client | undefined>(undefined)
            : clients.resolve(definition.auth).pipe(
                Effect.map((client): OAuth2Client | undefined => client),
                Effect.catch(() => Effect.succeed<OAuth2Client | undefined>(undefined))
              )

      const revokeAll = (row: ConnectionRow, definition: ConnectorDefinition, stored: StoredCredentials | undefined) =>
        Effect.gen(function* () {
          const auth = definition.auth
          if (auth.type !== "oauth2" || auth.revocation_endpoint === undefined) return []
          if (stored?.kind !== "oauth2_authorization_code" && stored?.kind !== "oauth2_client_credentials") return []
          const endpoint = auth.revocation_endpoint
          const client = yield* revokingClient(definition, stored)
          const tokens: Array<readonly [RevocationKind, string]> = []
          if (stored.token.refresh_token !== undefined) tokens.push(["refresh_token", stored.token.refresh_token])
          tokens.push(["access_token", stored.token.access_token])
          const options = endpointOptions(definition, endpoint, config.outbound.allowPrivateNetworks)
          return yield* Effect.forEach(tokens, ([kind, token]) =>
            (client === undefined
              ? Effect.succeed<RevocationOutcome>({ kind, result: "failure", reason: "client_not_configured" })
              : revokeToken(
                  endpoint,
                  auth.client_auth,
                  client,
                  { token, tokenTypeHint: kind },
                  calls.send("oauth2_revoke", subjectOf(row), (request) => outbound.send(request, options))
                ).pipe(
                  oauth2LabelsOf(ops, subjectOf(row)),
                  Effect.as<RevocationOutcome>({ kind, result: "success" }),
                  Effect.catch((failure) =>
                    Effect.logWarning(
                      `oauth2 ${kind} revocation for ${row.id} failed (${failure.reason}); disconnecting anyway`
                    ).pipe(Effect.as<RevocationOutcome>({ kind, result: "failure", reason: failure.reason }))
                  )
                )
            ).pipe(
              Effect.withSpan("oauth2.revoke", {
                attributes: { "svc.connection_id": row.id, "svc.oauth2.revocation_kind": kind }
              })
            )
          )
        })

      /** Disconnecting, revocations, `disconnected` with credentials erased and soft-deleted. */
      const end = (row: ConnectionRow, definition: ConnectorDefinition) =>
        Effect.gen(function* () {
          const id = row.id
          yield* Effect.orDie(repo.setState(id, "disconnecting", yield* now))
          changes.changed(id)
          // The credentials leave the database before any revocation is sent: a disconnect resumed
          // after a crash finds none, so no token is ever revoked twice (at most once: one whose
          // request was cut by the crash may stay unrevoked, spec 3.1).
          const stored = yield* secrets.credentials(row)
          yield* Effect.orDie(repo.eraseCredentials(id, yield* now))
          // Every process's caches drop the erased credentials before anything else happens.
          yield* changes.written([id])
          const revocations = yield* revokeAll(row, definition, stored)
          yield* Effect.orDie(repo.markDisconnected(id, yield* now))
          // Before the task reports done: no process serves the connection from its cache any more.
          yield* changes.written([id])
          yield* Effect.logInfo(
            `connection ${id} disconnected; revocations: ${revocations.map((r) => `${r.kind} ${r.result}`).join(", ") || "none"}`
          )
          return revocations
        })

      const disconnectById = Effect.fn("ConnectionDisconnect.disconnectById")(function* (id: string) {
        const found = yield* ops.find(Kinds.connections, id)
        if (Option.isNone(found) || found.value.state === "disconnected") return "gone" as const
        const row = found.value
        const definition = yield* definitions.get(row.connectorId, row.connectorVersion)
        yield* end(row, definition)
        return "disconnected" as const
      })

      return ConnectionDisconnect.of({ disconnectById })
    })
  )
}
