/** Connection writes outside the generic resource operations: credential swaps by the service itself. */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

/** Storage operations on connection secrets. */
export class ConnectionRepo extends Context.Service<
  ConnectionRepo,
  {
    /**
     * Compare-and-swap of the credentials ciphertext (a token refresh must not undo a concurrent
     * rotation); false when the row changed meanwhile.
     */
    readonly swapCredentials: (
      id: string,
      expected: string | null,
      next: string,
      now: Date
    ) => Effect.Effect<boolean, SqlError>
  }
>()("@svc/sql/ConnectionRepo") {
  static readonly layer: Layer.Layer<ConnectionRepo, never, SqlClient.SqlClient> = Layer.effect(
    ConnectionRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const swapCredentials = Effect.fn("ConnectionRepo.swapCredentials")(function* (
        id: string,
        expected: string | null,
        next: string,
        now: Date
      ) {
        const rows = yield* sql`
          UPDATE connections SET credentials_enc = ${next}, updated_at = ${now}
          WHERE id = ${id} AND deleted_at IS NULL AND credentials_enc IS NOT DISTINCT FROM ${expected}
          RETURNING id`
        return rows.length === 1
      })
      return ConnectionRepo.of({ swapCredentials })
    })
  )
}
