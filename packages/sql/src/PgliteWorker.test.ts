/**
 * `PgliteClient.layerWorker` (issue 16): PGlite in a worker thread behaves as in process — typed
 * parameters and decoded rows (int8 as BigInt, timestamptz as Date, bytea, jsonb, arrays),
 * serialised transactions with rollback, the PostgreSQL error classes — and its data persists
 * across a close and a reopen of the same directory. It runs with the embedded memory settings
 * (`PgliteSettings.ts`), in the thread as in process.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import * as PgTypes from "@effect/sql-pg/PgTypes"
import * as PgliteClient from "./PgliteClient.ts"
import { embeddedSettings } from "./PgliteSettings.ts"

const withDir = <A, E>(f: (dir: string) => Effect.Effect<A, E>) =>
  Effect.acquireUseRelease(
    Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "pglite-worker-"))),
    f,
    (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
  )

const onWorker = <A, E>(dir: string, body: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.provide(body, PgliteClient.layerWorker({ dataDir: dir }).pipe(Layer.orDie))

describe("PgliteClient.layerWorker", () => {
  it.effect(
    "decodes rows as in process, serialises transactions, classifies errors and persists across a reopen",
    () =>
      withDir((dir) =>
        Effect.gen(function* () {
          yield* onWorker(
            dir,
            Effect.gen(function* () {
              const sql = yield* SqlClient.SqlClient
              yield* sql`CREATE TABLE w (id int8 PRIMARY KEY, at timestamptz NOT NULL, data bytea, doc jsonb, tags text[])`
              const at = new Date("2026-11-24T08:00:00.123Z")
              yield* sql`INSERT INTO w ${sql.insert({ id: 9007199254740993n, at, data: new Uint8Array([1, 2, 255]), doc: PgTypes.jsonb({ a: [1, "x"] }), tags: ["p", "q"] })}`
              const [row] = yield* sql<{
                id: bigint
                at: Date
                data: Uint8Array
                doc: unknown
                tags: ReadonlyArray<string>
              }>`SELECT * FROM w`
              assert.strictEqual(row?.id, 9007199254740993n)
              assert.strictEqual(row?.at.toISOString(), at.toISOString())
              assert.deepStrictEqual([...(row?.data ?? [])], [1, 2, 255])
              assert.deepStrictEqual(row?.doc, { a: [1, "x"] })
              assert.deepStrictEqual(row?.tags, ["p", "q"])

              const failed = yield* Effect.exit(
                sql.withTransaction(
                  Effect.andThen(
                    sql`INSERT INTO w (id, at) VALUES (1, now())`,
                    sql`INSERT INTO w (id, at) VALUES (1, now())`
                  )
                )
              )
              assert.isTrue(Exit.isFailure(failed))
              const reason = Exit.isFailure(failed) ? JSON.stringify(failed.cause) : ""
              assert.include(reason, "UniqueViolation")
              assert.deepStrictEqual(yield* sql`SELECT count(*)::int AS n FROM w`, [{ n: 1 }])

              const syntax = yield* Effect.exit(sql`SELEC 1`)
              assert.include(Exit.isFailure(syntax) ? JSON.stringify(syntax.cause) : "", "SqlSyntaxError")
            })
          )
          const reopened = yield* onWorker(
            dir,
            Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM w`)
          )
          assert.deepStrictEqual(reopened, [{ n: 1 }])
        })
      ),
    { timeout: 60_000 }
  )

  it.effect(
    "opens with the embedded memory settings, in the thread and in process",
    () =>
      withDir((dir) =>
        Effect.gen(function* () {
          const show = Effect.flatMap(SqlClient.SqlClient, (sql) =>
            Effect.forEach(Object.keys(embeddedSettings), (name) =>
              Effect.map(sql.unsafe<Record<string, string>>(`SHOW ${name}`), (rows) => [
                name,
                Object.values(rows[0] ?? {})[0]
              ])
            )
          )
          const expected = Object.entries(embeddedSettings)
          assert.deepStrictEqual(yield* onWorker(dir, show), expected)
          assert.deepStrictEqual(
            yield* Effect.provide(show, PgliteClient.layer({ dataDir: dir }).pipe(Layer.orDie)),
            expected
          )
          assert.strictEqual(embeddedSettings.shared_buffers, "16MB")
        })
      ),
    { timeout: 60_000 }
  )
})
