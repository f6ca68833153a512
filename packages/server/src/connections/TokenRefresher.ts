/**
 * OAuth2 token refresh (spec 8.3): proactive before expiry on use, once after an upstream 401, and
 * for the background sweep; single flight per connection within the process (one shared attempt)
 * and across processes (the counter-store lease of `RefreshLease.ts`; the holder re-reads the row
 * so a refresh another process stored is used instead of calling the provider again). Every write
 * is a compare-and-swap that also sets `token_refresh_due_at` and health. A refresh failure never
 * fails the caller: it is classified, re-authentication failures mark the connection unhealthy
 * with one reauth notice, transient ones back the sweep off. No token value leaves this module.
 * Provider calls go through `LimitedCalls` when the process has it (rules of type
 * `oauth2_refresh` / `oauth2_client_credentials`, request events).
 */
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import type { ConnectionId } from "@svc/domain/Ids"
import { reauthKey, reauthNotice } from "@svc/domain/Notification"
import type { StoredCredentials } from "@svc/domain/ConnectorAuth"
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import type { ConnectionRow } from "@svc/sql/Rows"
import { Cause, Clock, Context, DateTime, Deferred, Duration, Effect, Layer, Option, type Exit } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { Outbound } from "../outbound/Outbound.ts"
import { ConnectionChanges } from "../resources/ConnectionChanges.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import { CounterStore } from "../stores/CounterStore.ts"
import { Notifications } from "../resources/Notifications.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"
import { ConnectionSecrets } from "./ConnectionSecrets.ts"
import { type CallSubject, LimitedCalls, subjectOf } from "./LimitedCalls.ts"
import { oauth2LabelsOf } from "./OAuth2Labels.ts"
import { OAuthClient } from "./OAuthClient.ts"
import { fresh, gone, type RefreshNowResult, type RefreshOutcome } from "./RefreshOutcome.ts"
import { leaseTtlMs, makeRefreshLease, permanentFailureMemoryMs, transientFailureMemoryMs } from "./RefreshLease.ts"
import { deadReasons, makeTokenSource, reauthReasons, countRefresh, type TokenFailure } from "./TokenSource.ts"
import { scopeNames } from "../oauth/TokenEndpoint.ts"
import { dueAt, isDue, isExpired, isOAuth2, type OAuth2Credentials, retryAt } from "./UsableCredentials.ts"

export type { RefreshNowResult, RefreshOutcome } from "./RefreshOutcome.ts"

/** How often a process waiting on another's lease re-reads the row. */
const pollIntervalMs = 100

/** What a flight replaces: the access token `stale` of connection `id`. */
interface Target {
  readonly id: ConnectionId
  readonly namespace: string
  /** Whom the provider call is made for (rate-limit rules, its request event). */
  readonly subject: CallSubject
  readonly definition: ConnectorDefinition
  readonly stale: string
}

/** The stored credentials as read: the ciphertext (the compare-and-swap value) and its plaintext. */
interface Found {
  readonly sealed: string
  readonly credentials: OAuth2Credentials
}

/** Keeps OAuth2 connections' tokens fresh. */
export class TokenRefresher extends Context.Service<
  TokenRefresher,
  {
    /**
     * The credentials of `row` for a request now: decrypted, and an OAuth2 token that is due
     * refreshed first (single flight). A failed refresh returns the current credentials and lets
     * the upstream decide; this never fails.
     */
    readonly usable: (
      row: ConnectionRow,
      definition: ConnectorDefinition
    ) => Effect.Effect<StoredCredentials | undefined>
    /**
     * After the upstream answered 401 to `used`: the stored credentials when someone has already
     * replaced that token, else the result of one refresh (single flight); undefined when nothing
     * could be refreshed or the refresh failed (the caller returns the 401 as it is).
     */
    readonly afterUnauthorized: (
      row: ConnectionRow,
      definition: ConnectorDefinition,
      used: StoredCredentials | undefined
    ) => Effect.Effect<StoredCredentials | undefined>
    /**
     * The sweep's entry: refreshes connection `id` when its `token_refresh_due_at` is within the
     * sweep interval from now (any time with `force`).
     */
    readonly refreshNow: (
      id: ConnectionId,
      options?: {
        readonly force?: boolean | undefined
        /** Ask the provider even when a failure is remembered for these credentials (an explicit re-authentication). */
        readonly retryRemembered?: boolean | undefined
      }
    ) => Effect.Effect<RefreshNowResult>
  }
>()("@svc/server/TokenRefresher") {
  /** The refresher without its OAuth2 client resolution (tests provide their own `OAuthClient`). */
  static readonly layerNoDeps: Layer.Layer<
    TokenRefresher,
    never,
    | ConnectionRepo
    | ConnectionSecrets
    | ConnectorDefinitions
    | ResourceOps
    | Outbound
    | SvcConfig
    | CounterStore
    | Notifications
    | ConnectionChanges
    | OAuthClient
  > = Layer.effect(
    TokenRefresher,
    Effect.gen(function* () {
      const connections = yield* ConnectionRepo
      const secrets = yield* ConnectionSecrets
      const definitions = yield* ConnectorDefinitions
      const ops = yield* ResourceOps
      const config = yield* SvcConfig
      const notifications = yield* Notifications
      const changes = yield* ConnectionChanges
      const lease = makeRefreshLease(yield* CounterStore)
      const tokens = makeTokenSource({
        outbound: yield* Outbound,
        calls: Option.getOrUndefined(yield* Effect.serviceOption(LimitedCalls)),
        clients: yield* OAuthClient,
        allowPrivateNetworks: config.outbound.allowPrivateNetworks,
        maxCallMs: leaseTtlMs / 2
      })
      const scope = yield* Effect.scope
      const defaultLifetimeMs = config.oauth2.defaultTokenLifetimeMs
      const lookaheadMs = config.oauth2.refreshSweepIntervalMs
      const flights = new Map<string, Deferred.Deferred<RefreshOutcome>>()

      /** The stored OAuth2 credentials of the target's connection, read now. */
      const read = (target: Target) =>
        Effect.gen(function* () {
          const row = yield* Effect.orDie(connections.currentCredentials(target.id))
          if (row === undefined || row.value === null) return undefined
          const credentials = yield* secrets.credentials({
            id: target.id,
            namespace: target.namespace,
            credentialsEnc: row.value,
            configurationEnc: null,
            legacyConfiguration: null
          })
          return isOAuth2(credentials) ? ({ sealed: row.value, credentials } satisfies Found) : undefined
        })

      /** The outcome when the row no longer holds the stale token, or a failure is remembered for it. */
      const settled = (target: Target, found: Found | undefined) =>
        Effect.gen(function* () {
          if (found === undefined) return gone
          if (found.credentials.token.access_token !== target.stale) return fresh("other", found.credentials)
          const reason = yield* lease.recall(target.id, found.sealed)
          if (reason === undefined) return undefined
          return { _tag: "Failed", reason, credentials: found.credentials } satisfies RefreshOutcome
        })

      /** Stores refreshed credentials over `found`; a re-seal by key rotation meanwhile is retried. */
      const store = (target: Target, found: Found, next: OAuth2Credentials, now: number) =>
        Effect.gen(function* () {
          const sealed = yield* secrets.sealCredentials(target, next)
          const scope = next.token.scope
          const auth = target.definition.auth
          // A version migration's re-authentication notice (a new required scope or preconnect
          // field, spec 4.3 rule 4) is not answered by a refresh: it stays, and so does unhealthy.
          const migrationReauth = yield* notifications.migrationReauthPending(target.id)
          const side = {
            tokenRefreshDueAt: dueAt(target.definition, next, defaultLifetimeMs),
            ...(migrationReauth ? {} : { healthState: "healthy" as const }),
            ...(scope === undefined
              ? {}
              : { grantedScopes: scopeNames(scope, auth.type === "oauth2" ? auth.scope_separator : " ") })
          }
          let expected = found.sealed
          for (let tries = 0; tries < 3; tries++) {
            if (yield* Effect.orDie(connections.swapCredentials(target.id, expected, sealed, new Date(now), side))) {
              yield* lease.forget(target.id)
              if (!migrationReauth) yield* notifications.clear(target.id, reauthKey)
              changes.changed(target.id)
              yield* countRefresh("success")
              yield* Effect.annotateCurrentSpan({ "svc.oauth2.refresh.result": "success" })
              yield* Effect.logInfo(`refreshed the OAuth2 token of connection ${target.id}`)
              return fresh("self", next)
            }
            const latest = yield* read(target)
            if (latest === undefined || latest.credentials.token.access_token !== target.stale) {
              yield* Effect.logWarning(
                `the refreshed token of connection ${target.id} was not stored: its credentials changed meanwhile`
              )
              return latest === undefined ? gone : fresh("other", latest.credentials)
            }
            expected = latest.sealed
          }
          return yield* Effect.die(new Error(`connection ${target.id}: the refreshed token could not be stored`))
        })

      /** Records a failed refresh of `found`: metrics, memory, health, notice, the sweep's next time. */
      const failed = (target: Target, found: Found, failure: TokenFailure, now: number) =>
        Effect.gen(function* () {
          const { reason } = failure
          const reauth = reauthReasons.has(reason)
          yield* countRefresh("failure", reason)
          yield* Effect.annotateCurrentSpan({
            "svc.oauth2.refresh.result": "failure",
            "svc.oauth2.refresh.reason": reason
          })
          yield* Effect.logWarning(
            `OAuth2 token refresh of connection ${target.id} failed (${reason}): ${failure.detail}`
          )
          const memoryMs = reauth ? permanentFailureMemoryMs : transientFailureMemoryMs
          yield* lease.remember(target.id, found.sealed, reason, memoryMs)
          const at = new Date(now)
          if (reauth || isExpired(found.credentials, now)) {
            yield* Effect.orDie(connections.setHealth(target.id, "unhealthy", at, `token_refresh_failed: ${reason}`))
          }
          if (reauth)
            yield* notifications.raise({ id: target.id }, { ...reauthNotice(target.id), metadata: { reason } })
          const due = deadReasons.has(reason)
            ? null
            : retryAt(dueAt(target.definition, found.credentials, defaultLifetimeMs), now)
          // Only the sweep's time changes, and a concurrent credentials write wins.
          yield* Effect.orDie(connections.setRefreshDueAt(target.id, found.sealed, due))
          changes.changed(target.id)
          return { _tag: "Failed", reason, credentials: found.credentials } satisfies RefreshOutcome
        })

      /** The holder's part (lease held, or no store): re-read, then call the provider once. */
      const refreshHeld = (target: Target) =>
        Effect.gen(function* () {
          const found = yield* read(target)
          const done = yield* settled(target, found)
          if (done !== undefined || found === undefined) return done ?? gone
          const now = yield* Clock.currentTimeMillis
          const result = yield* Effect.result(tokens.obtain(target.definition, found.credentials, now, target.subject))
          return result._tag === "Failure"
            ? yield* failed(target, found, result.failure, now)
            : yield* store(target, found, result.success, now)
        }).pipe(
          // The provider call and the refresh counters (`countRefresh`) carry the connection's labels.
          oauth2LabelsOf(ops, target.subject),
          Effect.withSpan("oauth2.refresh", {
            attributes: {
              "svc.connection_id": target.id,
              "svc.oauth2.grant_type":
                target.definition.auth.type === "oauth2" ? target.definition.auth.grant_type : "none"
            }
          })
        )

      const holding = (target: Target, owner: string, state: "held" | "unavailable") =>
        state === "held" ? Effect.ensuring(refreshHeld(target), lease.release(target.id, owner)) : refreshHeld(target)

      /** Another process holds the lease: wait for its result, or take over when it lets go. */
      const awaitOther = (target: Target, first: Found, owner: string) =>
        Effect.gen(function* () {
          const deadline = (yield* Clock.currentTimeMillis) + leaseTtlMs + 5 * pollIntervalMs
          let latest = first
          while (true) {
            yield* Effect.sleep(Duration.millis(pollIntervalMs))
            const row = yield* Effect.orDie(connections.currentCredentials(target.id))
            if (row === undefined || row.value === null) return gone
            if (row.value !== latest.sealed) {
              const found = yield* read(target)
              if (found === undefined) return gone
              latest = found
            }
            const done = yield* settled(target, latest)
            if (done !== undefined) return done
            if (!(yield* lease.isHeld(target.id))) {
              const state = yield* lease.take(target.id, owner)
              if (state !== "busy") return yield* holding(target, owner, state)
            }
            if ((yield* Clock.currentTimeMillis) >= deadline) {
              return { _tag: "Unchanged", credentials: latest.credentials } satisfies RefreshOutcome
            }
          }
        })

      /** One attempt across processes. */
      const attempt = (target: Target): Effect.Effect<RefreshOutcome> =>
        Effect.gen(function* () {
          const found = yield* read(target)
          const done = yield* settled(target, found)
          if (done !== undefined || found === undefined) return done ?? gone
          const owner = lease.owner()
          const state = yield* lease.take(target.id, owner)
          return state === "busy" ? yield* awaitOther(target, found, owner) : yield* holding(target, owner, state)
        })

      /** The in-process single flight: concurrent callers share one attempt, which outlives any caller. */
      const flight = (target: Target): Effect.Effect<RefreshOutcome> =>
        Effect.suspend(() => {
          const running = flights.get(target.id)
          if (running !== undefined) return Deferred.await(running)
          const deferred = Deferred.makeUnsafe<RefreshOutcome>()
          flights.set(target.id, deferred)
          const run = attempt(target).pipe(
            Effect.catchCause((cause) =>
              Cause.hasInterruptsOnly(cause)
                ? Effect.failCause(cause)
                : Effect.gen(function* () {
                    yield* countRefresh("failure", "internal_error").pipe(oauth2LabelsOf(ops, target.subject))
                    yield* Effect.logError(
                      `OAuth2 token refresh of connection ${target.id} failed (internal_error)`,
                      cause
                    )
                    return { _tag: "Failed", reason: "internal_error", credentials: undefined } satisfies RefreshOutcome
                  })
            ),
            Effect.onExit((exit: Exit.Exit<RefreshOutcome>) =>
              Effect.andThen(
                Effect.sync(() => flights.delete(target.id)),
                Deferred.done(deferred, exit)
              )
            )
          )
          return Effect.andThen(Effect.forkIn(run, scope), Deferred.await(deferred))
        })

      const targetOf = (row: ConnectionRow, definition: ConnectorDefinition, stale: OAuth2Credentials): Target => ({
        id: row.id,
        namespace: row.namespace,
        subject: subjectOf(row),
        definition,
        stale: stale.token.access_token
      })

      const usable = Effect.fnUntraced(function* (row: ConnectionRow, definition: ConnectorDefinition) {
        const stored = yield* secrets.credentials(row)
        if (!isOAuth2(stored)) return stored
        if (!isDue(definition, stored, defaultLifetimeMs, yield* Clock.currentTimeMillis)) return stored
        const outcome = yield* flight(targetOf(row, definition, stored))
        return outcome._tag === "Gone" ? stored : (outcome.credentials ?? stored)
      })

      const afterUnauthorized = Effect.fn("TokenRefresher.afterUnauthorized")(function* (
        row: ConnectionRow,
        definition: ConnectorDefinition,
        used: StoredCredentials | undefined
      ) {
        if (!isOAuth2(used)) return undefined
        const outcome = yield* flight(targetOf(row, definition, used))
        return outcome._tag === "Fresh" && outcome.credentials.token.access_token !== used.token.access_token
          ? outcome.credentials
          : undefined
      })

      const refreshNow = Effect.fn("TokenRefresher.refreshNow")(function* (
        id: ConnectionId,
        options?: { readonly force?: boolean | undefined; readonly retryRemembered?: boolean | undefined }
      ) {
        const found = yield* ops.find(Kinds.connections, id)
        if (Option.isNone(found)) return "skipped" as const
        const row = found.value
        if (row.state !== "configured" && row.state !== "setup") return "skipped" as const
        const due = row.tokenRefreshDueAt
        const now = yield* Clock.currentTimeMillis
        if (options?.force !== true && (due == null || DateTime.toEpochMillis(due) > now + lookaheadMs)) {
          return "skipped" as const
        }
        const definition = yield* definitions.get(row.connectorId, row.connectorVersion)
        const stored = yield* secrets.credentials(row)
        if (!isOAuth2(stored) || dueAt(definition, stored, defaultLifetimeMs) === null) {
          // Nothing to refresh (no refresh token, refresh disabled, another auth method): stop sweeping it.
          if (row.credentialsEnc !== null && due != null) {
            yield* Effect.orDie(
              connections.swapCredentials(id, row.credentialsEnc, row.credentialsEnc, new Date(now), {
                tokenRefreshDueAt: null
              })
            )
          }
          return "skipped" as const
        }
        if (options?.retryRemembered === true) yield* lease.forget(id)
        const outcome = yield* flight(targetOf(row, definition, stored))
        return outcome._tag === "Fresh" ? "refreshed" : outcome._tag === "Failed" ? "failed" : "skipped"
      })

      return TokenRefresher.of({ usable, afterUnauthorized, refreshNow })
    })
  )

  /** The refresher with its OAuth2 client resolution from `SvcConfig`. */
  static readonly layer = TokenRefresher.layerNoDeps.pipe(Layer.provide(OAuthClient.layerNoDeps))
}
