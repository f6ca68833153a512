/**
 * The production shape for black-box tests: a temporary directory holding an HS256 shared secret,
 * an encryption root key and `svc.yaml` on a fresh PostgreSQL database and a Redis key prefix of
 * its own, with an `ops` actor allowed everything. Extra configuration lines are appended.
 */
import { Context, Effect, Exit, Layer, Scope } from "effect"
import type { SqlClient } from "effect/sql"
import { SqlClient as SqlClientTag } from "effect/sql"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { TestDatabase, postgres } from "@svc/sql/TestDatabase"
import { opsConfigLines, opsToken, writeOpsKeys } from "./OpsActor.ts"
import { tempDir } from "./SvcProcess.ts"

export interface ProductionWorkspace {
  readonly dir: string
  /** The database URL (the test database). */
  readonly url: string
  /** A client of the same database, for tests that look at rows directly. */
  readonly sql: SqlClient.SqlClient
  /** The HS256 shared secret svc verifies tokens with. */
  readonly secret: Uint8Array
  /** The configuration lines every production test shares, for a file of its own. */
  readonly baseConfig: ReadonlyArray<string>
  /** A token of the `ops` actor (allowed everything), signed with the shared secret, valid `expiresIn` (default 1h). */
  readonly opsToken: (expiresIn?: string) => Promise<string>
  /** Writes `name` (default `svc.yaml`): the shared lines, then `extra`. */
  readonly writeConfig: (extra?: ReadonlyArray<string>, name?: string) => Promise<void>
  /** Drops the database and removes the directory. */
  readonly close: () => Promise<void>
}

export const productionWorkspace = async (prefix: string): Promise<ProductionWorkspace> => {
  const dir = await tempDir(prefix)
  const scope = await Effect.runPromise(Scope.make())
  const context = await Effect.runPromise(Layer.buildWithScope(postgres, scope))
  const url = Context.get(context, TestDatabase).url ?? ""
  const secret = await writeOpsKeys(dir)
  const baseConfig = [
    `database: { provider: postgres, url: "${url}", max_connections: 4 }`,
    `counter_store: { provider: redis, url: "redis://127.0.0.1:6379", key_prefix: "svc-e2e-${randomUUID()}:" }`,
    ...opsConfigLines
  ]
  return {
    dir,
    url,
    sql: Context.get(context, SqlClientTag.SqlClient),
    secret,
    baseConfig,
    opsToken: (expiresIn = "1h") => opsToken(secret, expiresIn),
    writeConfig: (extra = [], name = "svc.yaml") =>
      fs.writeFile(path.join(dir, name), [...baseConfig, ...extra].join("\n")),
    close: async () => {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await fs.rm(dir, { recursive: true, force: true })
    }
  }
}
