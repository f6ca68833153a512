/**
 * Run by PgliteSettings.test.ts in a process of its own (V8's flags are the process's): opens a
 * fresh in-memory PGlite through `PgliteClient.layerWorker`, as svc's embedded default does, and
 * runs 300 statements that each go through the SQL parser.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as PgliteClient from "./PgliteClient.ts"

const program = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  let count = 0
  for (let i = 0; i < 300; i++) {
    yield* sql.unsafe(`SELECT ${i} AS n, relname FROM pg_class WHERE relname = $1 LIMIT 1`, ["pg_proc"])
    count++
  }
  console.log(`statements: ${count}`)
})

await Effect.runPromise(Effect.scoped(program.pipe(Effect.provide(PgliteClient.layerWorker({ dataDir: "memory://" })))))
