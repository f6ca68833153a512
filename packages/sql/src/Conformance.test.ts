import * as PgTypes from "@effect/sql-pg/PgTypes"
import { assert, layer } from "@effect/vitest"
import { Effect, Exit, Stream } from "effect"
import { SqlClient } from "effect/sql"
import * as TestDatabase from "./TestDatabase.ts"

// The same suite against PostgreSQL (@effect/sql-pg) and PGlite: both clients must behave alike.
for (const [backend, db] of TestDatabase.backends) {
  layer(db, { timeout: "60 seconds" })(`SqlClient conformance (${backend})`, (it) => {
    it.effect("decodes column values like @effect/sql-pg", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql`SELECT
          1::int4 AS an_int, 2::int8 AS a_bigint, 1.5::float8 AS a_float, 1.50::numeric AS a_numeric,
          true AS a_bool, '2024-01-02'::date AS a_date,
          '2024-01-02T03:04:05.678Z'::timestamptz AS a_timestamptz,
          '2024-01-02 03:04:05.678'::timestamp AS a_timestamp,
          '{"snake_key": [1, "v"]}'::jsonb AS a_jsonb, ARRAY['x', 'y'] AS a_text_array,
          ARRAY[1, 2]::int4[] AS an_int_array, NULL::text AS a_null`
        assert.deepStrictEqual(row, {
          anInt: 1,
          aBigint: 2n,
          aFloat: 1.5,
          aNumeric: "1.50",
          aBool: true,
          aDate: "2024-01-02",
          aTimestamptz: new Date("2024-01-02T03:04:05.678Z"),
          aTimestamp: new Date("2024-01-02T03:04:05.678Z"),
          aJsonb: { snake_key: [1, "v"] },
          aTextArray: ["x", "y"],
          anIntArray: [1, 2],
          aNull: null
        })
      })
    )

    it.effect("binds parameters like @effect/sql-pg", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const at = new Date("2025-05-06T07:08:09.123Z")
        const [row] = yield* sql`SELECT
          ${"text"} AS s, ${5} + 1 AS n, ${2n ** 40n} AS big, ${1.25} AS f, ${true} AS b, ${at} AS d,
          ${PgTypes.jsonb({ a_b: [1, "x"] })} AS j, ${["a", 'b"c']}::text[] AS arr, ${null}::int AS nul,
          ${"7"}::int8 AS coerced, ${'{"k":1}'}::jsonb AS json_text, length(${new Uint8Array([1, 2, 3])}) AS bytes`
        assert.deepStrictEqual(row, {
          s: "text",
          n: 6,
          big: 2n ** 40n,
          f: 1.25,
          b: true,
          d: at,
          j: { a_b: [1, "x"] },
          arr: ["a", 'b"c'],
          nul: null,
          coerced: 7n,
          jsonText: { k: 1 },
          bytes: 3
        })
      })
    )

    it.effect("maps camelCase identifiers to snake_case columns and back; withoutTransforms keeps SQL names", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE conformance_names (some_column int NOT NULL, other_value text)`
        yield* sql`INSERT INTO ${sql("conformanceNames")} ${sql.insert({ someColumn: 1, otherValue: "v" })}`
        assert.deepStrictEqual(yield* sql`SELECT * FROM conformance_names`, [{ someColumn: 1, otherValue: "v" }])
        const raw = sql.withoutTransforms()
        assert.deepStrictEqual(yield* raw`SELECT * FROM conformance_names`, [{ some_column: 1, other_value: "v" }])
        assert.strictEqual(raw.driver, sql.driver)
        assert.deepStrictEqual(yield* raw`SELECT some_column FROM conformance_names`.values, [[1]])
      })
    )

    it.effect("names its driver", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        assert.strictEqual(sql.driver, backend === "pglite" ? "pglite" : "pg")
        assert.strictEqual(sql.onDialectOrElse({ pg: () => "pg", orElse: () => "other" }), "pg")
      })
    )

    it.effect("rolls back failed transactions and failed savepoints", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE conformance_rollback (id int PRIMARY KEY)`
        const failed = yield* Effect.exit(
          sql.withTransaction(
            Effect.andThen(sql`INSERT INTO conformance_rollback VALUES (1)`, Effect.fail("boom" as const))
          )
        )
        assert.isTrue(Exit.isFailure(failed))
        assert.deepStrictEqual(yield* sql`SELECT id FROM conformance_rollback`, [])
        yield* sql.withTransaction(
          Effect.gen(function* () {
            yield* sql`INSERT INTO conformance_rollback VALUES (2)`
            yield* sql
              .withTransaction(
                Effect.andThen(sql`INSERT INTO conformance_rollback VALUES (3)`, Effect.fail("inner" as const))
              )
              .pipe(Effect.ignore)
            yield* sql`INSERT INTO conformance_rollback VALUES (4)`
          })
        )
        assert.deepStrictEqual(yield* sql`SELECT id FROM conformance_rollback ORDER BY id`, [{ id: 2 }, { id: 4 }])
      })
    )

    it.effect("fails a COMMIT of an aborted transaction", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE conformance_aborted (id int PRIMARY KEY)`
        const exit = yield* Effect.exit(
          sql.withTransaction(
            Effect.gen(function* () {
              yield* sql`INSERT INTO conformance_aborted VALUES (1)`
              yield* sql`INSERT INTO conformance_aborted VALUES (1)`.pipe(Effect.ignore)
            })
          )
        )
        assert.isTrue(Exit.isFailure(exit))
        assert.deepStrictEqual(yield* sql`SELECT id FROM conformance_aborted`, [])
      })
    )

    it.effect("classifies errors: unique violation with its constraint, syntax error", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE TABLE conformance_unique (id int CONSTRAINT conformance_unique_pk PRIMARY KEY)`
        yield* sql`INSERT INTO conformance_unique VALUES (1)`
        const duplicate = yield* Effect.flip(sql`INSERT INTO conformance_unique VALUES (1)`)
        assert.strictEqual(duplicate.reason._tag, "UniqueViolation")
        assert.strictEqual(
          duplicate.reason._tag === "UniqueViolation" && duplicate.reason.constraint,
          "conformance_unique_pk"
        )
        const syntax = yield* Effect.flip(sql`SELEC 1`)
        assert.strictEqual(syntax.reason._tag, "SqlSyntaxError")
      })
    )

    it.effect("refuses several commands in one statement", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const error = yield* Effect.flip(sql`SELECT 1; SELECT 2`)
        assert.strictEqual(error._tag, "SqlError")
      })
    )

    it.effect("streams rows", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* Stream.runCollect(sql`SELECT g AS some_value FROM generate_series(1, 3) g`.stream)
        assert.deepStrictEqual(Array.from(rows), [{ someValue: 1 }, { someValue: 2 }, { someValue: 3 }])
      })
    )
  })
}
