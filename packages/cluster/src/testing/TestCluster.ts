/**
 * Test support for the cluster package: quick runner timings, SQL layers for fixture processes
 * and throwaway PGlite data directories (fresh PostgreSQL databases come from `@svc/sql/TestDatabase`).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as PgClient from "@svc/sql/PgClient"
import * as PgliteClient from "@svc/sql/PgliteClient"
import { Effect, Layer } from "effect"
import type { Scope } from "effect"
import type { SqlClient } from "effect/sql"
import type { SingleOptions } from "../ClusterRuntime.ts"

/** Runner timings that keep restart tests quick; never used as production defaults. */
export const testRuntimeOptions: SingleOptions = {
  entityMessagePollInterval: "200 millis",
  entityReplyPollInterval: "50 millis",
  refreshAssignmentsInterval: "200 millis",
  entityTerminationTimeout: "2 seconds"
}

/** `SqlClient` over the given PostgreSQL URL (the production client of `@svc/sql`). */
export const postgresLayer = (url: string): Layer.Layer<SqlClient.SqlClient> =>
  PgClient.layer({ url, poolSize: 4 }).pipe(Layer.orDie)

/** `SqlClient` over a PGlite data directory (the embedded-default client of `@svc/sql`). */
export const pgliteLayer = (dataDir: string): Layer.Layer<SqlClient.SqlClient> =>
  PgliteClient.layer({ dataDir }).pipe(Layer.orDie)

/** `SqlClient` for a fixture process: a PostgreSQL URL or a PGlite data directory. */
export const sqlLayerFor = (kind: "postgres" | "pglite", target: string): Layer.Layer<SqlClient.SqlClient> =>
  kind === "postgres" ? postgresLayer(target) : pgliteLayer(target)

/** Creates an empty temporary PGlite data directory, removed when the scope closes. */
export const freshPgliteDir = (label: string): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => join(mkdtempSync(join(tmpdir(), `svc-cluster-${label}-`)), "pgdata")),
    (dir) => Effect.sync(() => rmSync(join(dir, ".."), { recursive: true, force: true }))
  )
