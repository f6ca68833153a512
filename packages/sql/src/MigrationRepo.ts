/**
 * Storage of a connection's version migration (spec 4.3 rule 5): the connection row read under a
 * row lock inside the migration's transaction, and the one write of its version, encrypted
 * configuration, labels, annotations, setup and health state. The caller opens the transaction
 * (notifications and the task's progress are written in the same one).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { jsonb } from "./ResourceRepo.ts"
import { ConnectionRow } from "./Rows.ts"

const decodeRows = Schema.decodeUnknownEffect(Schema.Array(ConnectionRow))

/** What one migration writes on the connection row. */
export interface MigratedColumns {
  readonly connectorVersion: number
  readonly configurationEnc: string
  readonly labels: Readonly<Record<string, string>>
  readonly annotations: Readonly<Record<string, string>>
  readonly setupStepId: string | null
  readonly healthState: "healthy" | "unhealthy"
}

export class MigrationRepo extends Context.Service<
  MigrationRepo,
  {
    /** The live connection locked for the rest of the transaction (`FOR UPDATE`). */
    readonly lock: (id: string) => Effect.Effect<Option.Option<ConnectionRow>, SqlError>
    /** Writes the migrated columns of a live connection (plaintext configuration cleared); false when gone. */
    readonly write: (id: string, columns: MigratedColumns, now: Date) => Effect.Effect<boolean, SqlError>
  }
>()("@svc/sql/MigrationRepo") {
  static readonly layer: Layer.Layer<MigrationRepo, never, SqlClient.SqlClient> = Layer.effect(
    MigrationRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const lock = Effect.fn("MigrationRepo.lock")(function* (id: string) {
        const rows = yield* sql`SELECT * FROM connections WHERE id = ${id} AND deleted_at IS NULL FOR UPDATE`
        const decoded = yield* Effect.orDie(decodeRows(rows))
        return Option.fromNullishOr(decoded[0])
      })

      const write = Effect.fn("MigrationRepo.write")(function* (id: string, columns: MigratedColumns, now: Date) {
        const rows = yield* sql`
          UPDATE connections SET
            connector_version = ${columns.connectorVersion},
            configuration_enc = ${columns.configurationEnc},
            legacy_configuration = NULL,
            labels = ${jsonb(columns.labels)},
            annotations = ${jsonb(columns.annotations)},
            setup_step_id = ${columns.setupStepId},
            health_state = ${columns.healthState},
            updated_at = ${now}
          WHERE id = ${id} AND deleted_at IS NULL
          RETURNING id`
        return rows.length === 1
      })

      return MigrationRepo.of({ lock, write })
    })
  )
}
