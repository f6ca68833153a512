/**
 * Handlers of the demo `Counter` entity. State lives in the `cluster_demo_counters` table
 * (created by `layerSchema`): `Increment` updates the row and the in-memory value in one step,
 * activation rehydrates the value from the row, `Get` answers from memory (STYLE pattern 5).
 */
import { Effect, Layer, Ref } from "effect"
import { Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { SqlClient } from "effect/sql"
import { CounterEntity } from "./CounterEntity.ts"

/** Creates the demo counter table if missing. */
export const layerSchema: Layer.Layer<never, never, SqlClient.SqlClient> = Layer.effectDiscard(
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS cluster_demo_counters (
      id TEXT PRIMARY KEY,
      value INTEGER NOT NULL
    )`
  }).pipe(Effect.orDie)
)

const handlers = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { entityId } = yield* Entity.CurrentAddress
  const rows = yield* sql<{ readonly value: number }>`
    SELECT value FROM cluster_demo_counters WHERE id = ${entityId}`.pipe(Effect.orDie)
  const state = yield* Ref.make(rows[0]?.value ?? 0)

  return CounterEntity.of({
    Increment: ({ payload }) =>
      sql<{ readonly value: number }>`
        INSERT INTO cluster_demo_counters (id, value) VALUES (${entityId}, ${payload.by})
        ON CONFLICT (id) DO UPDATE SET value = cluster_demo_counters.value + EXCLUDED.value
        RETURNING value`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => {
          const value = rows[0]?.value ?? 0
          return Ref.set(state, value).pipe(Effect.as(value))
        })
      ),
    Get: () => Rpc.fork(Ref.get(state))
  })
})

/** Registers the `Counter` entity with the runner's `Sharding` (requires `SqlClient`). */
export const layer = CounterEntity.toLayer(handlers).pipe(Layer.provide(layerSchema))
