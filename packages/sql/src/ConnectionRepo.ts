/**
 * Connection writes outside the generic resource operations: what the service itself changes
 * (credential swaps by token renewal and refresh, setup progress, health after a failed refresh)
 * and the refresh sweep's query. Every credential write is a compare-and-swap on the ciphertext.
 */
import { ConnectionId } from "@svc/domain/Ids"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { jsonb } from "./ResourceRepo.ts"

const decodeIds = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ id: ConnectionId })))

/** Columns written together with swapped credentials; omitted ones stay. */
export interface CredentialSideColumns {
  /** OAuth2: the granted scopes. */
  readonly grantedScopes?: ReadonlyArray<string> | undefined
  /** OAuth2: when the background sweep refreshes next (null: never). */
  readonly tokenRefreshDueAt?: Date | null | undefined
  readonly healthState?: "healthy" | "unhealthy" | undefined
  readonly state?: "setup" | "configured" | undefined
  readonly setupStepId?: string | null | undefined
}

/** Storage operations on connection secrets and setup progress. */
export class ConnectionRepo extends Context.Service<
  ConnectionRepo,
  {
    /**
     * Compare-and-swap of the credentials ciphertext (a token refresh must not undo a concurrent
     * rotation); false when the row changed meanwhile. `side` columns are written in the same statement.
     */
    readonly swapCredentials: (
      id: ConnectionId,
      expected: string | null,
      next: string,
      now: Date,
      side?: CredentialSideColumns
    ) => Effect.Effect<boolean, SqlError>
    /** The current credentials ciphertext of a live connection (none when deleted). */
    readonly currentCredentials: (
      id: ConnectionId
    ) => Effect.Effect<{ readonly value: string | null } | undefined, SqlError>
    /**
     * Moves setup forward when the connection still stands at `expectedStep`: the new step (null
     * with state `configured`), and optionally new configuration ciphertext; false when it moved meanwhile.
     */
    readonly advanceSetup: (
      id: ConnectionId,
      expectedStep: string | null,
      next: {
        readonly setupStepId: string | null
        readonly state: "setup" | "configured"
        readonly configurationEnc?: string | undefined
      },
      now: Date
    ) => Effect.Effect<boolean, SqlError>
    /**
     * Compare-and-swap of the configuration ciphertext of a `configured` or `disabled` connection
     * (a re-authentication's new preconnect values); false when the row changed meanwhile.
     */
    readonly swapConfiguration: (
      id: ConnectionId,
      expected: string | null,
      next: string,
      now: Date
    ) => Effect.Effect<boolean, SqlError>
    /** Sets where the browser returns after the connection's next OAuth2 step (a re-authentication's). */
    readonly setReturnUrl: (id: ConnectionId, url: string | null, now: Date) => Effect.Effect<void, SqlError>
    /**
     * Sets the health state (a failed refresh makes a connection unhealthy); `reason` is what a
     * webhook's `connection.health_changed` reports.
     */
    readonly setHealth: (
      id: ConnectionId,
      health: "healthy" | "unhealthy",
      now: Date,
      reason?: string
    ) => Effect.Effect<void, SqlError>
    /** Sets when the sweep refreshes next, unless the credentials changed from `expected` meanwhile. */
    readonly setRefreshDueAt: (id: ConnectionId, expected: string, due: Date | null) => Effect.Effect<void, SqlError>
    /** Sets the state of a live connection (e.g. `disconnecting`). */
    readonly setState: (
      id: ConnectionId,
      state: "disconnecting" | "disabled" | "configured",
      now: Date
    ) => Effect.Effect<boolean, SqlError>
    /** Erases a live connection's credentials (a disconnect holds them in memory to revoke them). */
    readonly eraseCredentials: (id: ConnectionId, now: Date) => Effect.Effect<boolean, SqlError>
    /** Ends a connection: `disconnected`, credentials erased, soft-deleted (its name is free again). */
    readonly markDisconnected: (id: ConnectionId, now: Date) => Effect.Effect<boolean, SqlError>
    /** Ids of live connections whose token refresh is due at or before `before`, soonest first. */
    readonly dueForRefresh: (before: Date, limit: number) => Effect.Effect<ReadonlyArray<ConnectionId>, SqlError>
    /** Live connections still in `setup` whose last change is before `before` (abandoned setups), oldest first. */
    readonly abandonedSetups: (before: Date, limit: number) => Effect.Effect<ReadonlyArray<ConnectionId>, SqlError>
  }
>()("@svc/sql/ConnectionRepo") {
  static readonly layer: Layer.Layer<ConnectionRepo, never, SqlClient.SqlClient> = Layer.effect(
    ConnectionRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const swapCredentials = Effect.fn("ConnectionRepo.swapCredentials")(function* (
        id: ConnectionId,
        expected: string | null,
        next: string,
        now: Date,
        side?: CredentialSideColumns
      ) {
        const set: Record<string, unknown> = { credentials_enc: next, updated_at: now }
        if (side?.grantedScopes !== undefined) set.granted_scopes = jsonb(side.grantedScopes)
        if (side?.tokenRefreshDueAt !== undefined) set.token_refresh_due_at = side.tokenRefreshDueAt
        if (side?.healthState !== undefined) set.health_state = side.healthState
        if (side?.state !== undefined) set.state = side.state
        if (side?.setupStepId !== undefined) set.setup_step_id = side.setupStepId
        const rows = yield* sql`
          UPDATE connections SET ${sql.update(set)}
          WHERE id = ${id} AND deleted_at IS NULL AND credentials_enc IS NOT DISTINCT FROM ${expected}
          RETURNING id`
        return rows.length === 1
      })

      const currentCredentials = Effect.fn("ConnectionRepo.currentCredentials")(function* (id: ConnectionId) {
        const rows = yield* sql<{ readonly credentialsEnc: string | null }>`
          SELECT credentials_enc FROM connections WHERE id = ${id} AND deleted_at IS NULL`
        const row = rows[0]
        return row === undefined ? undefined : { value: row.credentialsEnc }
      })

      const advanceSetup = Effect.fn("ConnectionRepo.advanceSetup")(function* (
        id: ConnectionId,
        expectedStep: string | null,
        next: {
          readonly setupStepId: string | null
          readonly state: "setup" | "configured"
          readonly configurationEnc?: string | undefined
        },
        now: Date
      ) {
        const set: Record<string, unknown> = { setup_step_id: next.setupStepId, state: next.state, updated_at: now }
        if (next.configurationEnc !== undefined) set.configuration_enc = next.configurationEnc
        const rows = yield* sql`
          UPDATE connections SET ${sql.update(set)}
          WHERE id = ${id} AND deleted_at IS NULL AND setup_step_id IS NOT DISTINCT FROM ${expectedStep}
          RETURNING id`
        return rows.length === 1
      })

      const swapConfiguration = Effect.fn("ConnectionRepo.swapConfiguration")(function* (
        id: ConnectionId,
        expected: string | null,
        next: string,
        now: Date
      ) {
        const rows = yield* sql`
          UPDATE connections SET configuration_enc = ${next}, updated_at = ${now}
          WHERE id = ${id} AND deleted_at IS NULL AND state IN ('configured', 'disabled')
            AND configuration_enc IS NOT DISTINCT FROM ${expected}
          RETURNING id`
        return rows.length === 1
      })

      const setReturnUrl = Effect.fn("ConnectionRepo.setReturnUrl")(function* (
        id: ConnectionId,
        url: string | null,
        now: Date
      ) {
        yield* sql`
          UPDATE connections SET setup_return_url = ${url}, updated_at = ${now}
          WHERE id = ${id} AND deleted_at IS NULL`
      })

      const setHealth = Effect.fn("ConnectionRepo.setHealth")(function* (
        id: ConnectionId,
        health: "healthy" | "unhealthy",
        now: Date,
        reason?: string
      ) {
        // set_config runs in the statement's own transaction, before the row trigger reads it.
        yield* sql`
          UPDATE connections SET health_state = ${health}, updated_at = ${now}
          FROM (SELECT set_config('svc.webhook_reason', ${reason ?? ""}, true)) AS webhook_reason
          WHERE id = ${id} AND deleted_at IS NULL AND health_state <> ${health}`
      })

      const dueForRefresh = Effect.fn("ConnectionRepo.dueForRefresh")(function* (before: Date, limit: number) {
        const rows = yield* sql`
          SELECT id FROM connections
          WHERE deleted_at IS NULL AND token_refresh_due_at IS NOT NULL AND token_refresh_due_at <= ${before}
            AND state IN ('configured', 'setup')
          ORDER BY token_refresh_due_at, id
          LIMIT ${limit}`
        return (yield* Effect.orDie(decodeIds(rows))).map((row) => row.id)
      })

      const abandonedSetups = Effect.fn("ConnectionRepo.abandonedSetups")(function* (before: Date, limit: number) {
        const rows = yield* sql`
          SELECT id FROM connections
          WHERE deleted_at IS NULL AND state = 'setup' AND updated_at < ${before}
          ORDER BY updated_at, id
          LIMIT ${limit}`
        return (yield* Effect.orDie(decodeIds(rows))).map((row) => row.id)
      })

      const setRefreshDueAt = Effect.fn("ConnectionRepo.setRefreshDueAt")(function* (
        id: ConnectionId,
        expected: string,
        due: Date | null
      ) {
        yield* sql`
          UPDATE connections SET token_refresh_due_at = ${due}
          WHERE id = ${id} AND deleted_at IS NULL AND credentials_enc = ${expected}`
      })

      const setState = Effect.fn("ConnectionRepo.setState")(function* (id: ConnectionId, state: string, now: Date) {
        const rows = yield* sql`
          UPDATE connections SET state = ${state}, updated_at = ${now}
          WHERE id = ${id} AND deleted_at IS NULL RETURNING id`
        return rows.length === 1
      })

      const eraseCredentials = Effect.fn("ConnectionRepo.eraseCredentials")(function* (id: ConnectionId, now: Date) {
        const rows = yield* sql`
          UPDATE connections SET credentials_enc = NULL, token_refresh_due_at = NULL, updated_at = ${now}
          WHERE id = ${id} AND deleted_at IS NULL RETURNING id`
        return rows.length === 1
      })

      const markDisconnected = Effect.fn("ConnectionRepo.markDisconnected")(function* (id: ConnectionId, now: Date) {
        const rows = yield* sql`
          UPDATE connections SET state = 'disconnected', credentials_enc = NULL, token_refresh_due_at = NULL,
            updated_at = ${now}, deleted_at = ${now}
          WHERE id = ${id} AND deleted_at IS NULL RETURNING id`
        return rows.length === 1
      })

      return ConnectionRepo.of({
        swapCredentials,
        currentCredentials,
        advanceSetup,
        swapConfiguration,
        setReturnUrl,
        setHealth,
        setRefreshDueAt,
        setState,
        eraseCredentials,
        markDisconnected,
        dueForRefresh,
        abandonedSetups
      })
    })
  )
}
