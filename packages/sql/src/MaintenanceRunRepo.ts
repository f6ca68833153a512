/**
 * When each periodic maintenance job last completed (`maintenance_runs`), so a restarted worker
 * keeps the job's rhythm instead of running it again at once.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

const RunRow = Schema.Struct({ lastRunAt: Schema.Date })

/** Reads and records the last completion time of a named maintenance job. */
export class MaintenanceRunRepo extends Context.Service<
  MaintenanceRunRepo,
  {
    /** The last completion time of job `name`, if it ever completed. */
    readonly lastRun: (name: string) => Effect.Effect<Option.Option<Date>, SqlError>
    /** Records that job `name` completed at `at`. */
    readonly recordRun: (name: string, at: Date) => Effect.Effect<void, SqlError>
  }
>()("@svc/sql/MaintenanceRunRepo") {
  static readonly layer: Layer.Layer<MaintenanceRunRepo, never, SqlClient.SqlClient> = Layer.effect(
    MaintenanceRunRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const findRun = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: RunRow,
        execute: (name) => sql`SELECT last_run_at FROM maintenance_runs WHERE name = ${name}`
      })
      return MaintenanceRunRepo.of({
        lastRun: (name) =>
          findRun(name).pipe(
            Effect.map(Option.map((row) => row.lastRunAt)),
            // A row of our own that does not decode is a defect, not a client error.
            Effect.catchTag("SchemaError", (error) => Effect.die(error))
          ),
        recordRun: (name, at) =>
          Effect.asVoid(sql`INSERT INTO maintenance_runs (name, last_run_at) VALUES (${name}, ${at})
            ON CONFLICT (name) DO UPDATE SET last_run_at = EXCLUDED.last_run_at`)
      })
    })
  )
}
