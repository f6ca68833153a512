/**
 * Connector versions (spec 3.2): integer versions per connector, at most one `primary`; the
 * connector row carries the state, number and type of its current version for lists.
 */
import type { ConnectorId } from "@svc/domain/Ids"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { jsonb } from "./ResourceRepo.ts"
import { ConnectorVersionRow } from "./Rows.ts"

/** A version state. */
export type VersionState = "draft" | "primary" | "active" | "archived"

const decodeVersions = Schema.decodeUnknownEffect(Schema.Array(ConnectorVersionRow))

/** Storage of connector versions. */
export class ConnectorRepo extends Context.Service<
  ConnectorRepo,
  {
    readonly insertVersion: (
      connectorId: ConnectorId,
      definition: unknown,
      now: Date
    ) => Effect.Effect<ConnectorVersionRow, SqlError>
    readonly versions: (connectorId: ConnectorId) => Effect.Effect<ReadonlyArray<ConnectorVersionRow>, SqlError>
    readonly version: (
      connectorId: ConnectorId,
      version: number,
      options?: { readonly forUpdate?: boolean }
    ) => Effect.Effect<Option.Option<ConnectorVersionRow>, SqlError>
    /** Sets one version's state; publishing a primary first demotes the current one to `active`. */
    readonly setState: (
      connectorId: ConnectorId,
      version: number,
      state: VersionState,
      now: Date
    ) => Effect.Effect<void, SqlError>
    /** Live connections on one version. */
    readonly connectionsOn: (connectorId: ConnectorId, version: number) => Effect.Effect<number, SqlError>
    /** Recomputes the connector row's current version, state and type (same transaction). */
    readonly refreshCurrent: (connectorId: ConnectorId, now: Date) => Effect.Effect<void, SqlError>
  }
>()("@svc/sql/ConnectorRepo") {
  static readonly layer: Layer.Layer<ConnectorRepo, never, SqlClient.SqlClient> = Layer.effect(
    ConnectorRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const decode = (rows: ReadonlyArray<unknown>) => Effect.orDie(decodeVersions(rows))

      const insertVersion = Effect.fn("ConnectorRepo.insertVersion")(function* (
        connectorId: ConnectorId,
        definition: unknown,
        now: Date
      ) {
        // Concurrent creates would read the same MAX(version): the connector's row lock serialises them.
        yield* sql`SELECT 1 FROM connectors WHERE id = ${connectorId} FOR UPDATE`
        const rows = yield* sql`
          INSERT INTO connector_versions (connector_id, version, state, definition, created_at, updated_at)
          SELECT ${connectorId}, COALESCE(MAX(version), 0) + 1, 'draft', ${jsonb(definition)}, ${now}, ${now}
          FROM connector_versions WHERE connector_id = ${connectorId}
          RETURNING *`
        const [row] = yield* decode(rows)
        return row!
      })

      const versions = Effect.fn("ConnectorRepo.versions")(function* (connectorId: ConnectorId) {
        return yield* decode(
          yield* sql`SELECT * FROM connector_versions WHERE connector_id = ${connectorId} ORDER BY version DESC`
        )
      })

      const version = Effect.fn("ConnectorRepo.version")(function* (
        connectorId: ConnectorId,
        number: number,
        options?: { readonly forUpdate?: boolean }
      ) {
        const rows = yield* decode(
          yield* sql`SELECT * FROM connector_versions WHERE connector_id = ${connectorId} AND version = ${number}
            ${options?.forUpdate === true ? sql`FOR UPDATE` : sql``}`
        )
        return Option.fromNullishOr(rows[0])
      })

      const setState = Effect.fn("ConnectorRepo.setState")(function* (
        connectorId: ConnectorId,
        number: number,
        state: VersionState,
        now: Date
      ) {
        if (state === "primary") {
          // spec 3.2: publishing a primary demotes the previous primary to active.
          yield* sql`UPDATE connector_versions SET state = 'active', updated_at = ${now}
            WHERE connector_id = ${connectorId} AND state = 'primary' AND version <> ${number}`
        }
        yield* sql`UPDATE connector_versions SET state = ${state}, updated_at = ${now}
          WHERE connector_id = ${connectorId} AND version = ${number}`
      })

      const connectionsOn = Effect.fn("ConnectorRepo.connectionsOn")(function* (
        connectorId: ConnectorId,
        number: number
      ) {
        const rows = yield* sql<{ count: number | string }>`
          SELECT COUNT(*) AS count FROM connections
          WHERE connector_id = ${connectorId} AND connector_version = ${number} AND deleted_at IS NULL`
        return Number(rows[0]?.count ?? 0)
      })

      const refreshCurrent = Effect.fn("ConnectorRepo.refreshCurrent")(function* (connectorId: ConnectorId, now: Date) {
        yield* sql`
          UPDATE connectors SET state = v.state, version = v.version, type = v.definition->>'type', updated_at = ${now}
          FROM (
            SELECT state, version, definition FROM connector_versions WHERE connector_id = ${connectorId}
            ORDER BY CASE state WHEN 'primary' THEN 0 WHEN 'active' THEN 1 WHEN 'draft' THEN 2 ELSE 3 END, version DESC
            LIMIT 1
          ) AS v
          WHERE connectors.id = ${connectorId}`
      })

      return ConnectorRepo.of({ insertVersion, versions, version, setState, connectionsOn, refreshCurrent })
    })
  )
}
