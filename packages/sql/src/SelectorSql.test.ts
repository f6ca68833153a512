import * as PgTypes from "@effect/sql-pg/PgTypes"
import { assert, layer } from "@effect/vitest"
import { matches, parseSelector, type Requirement, type Selector } from "@svc/domain/Selector"
import { Array as Arr, Effect, Result } from "effect"
import { SqlClient } from "effect/sql"
import * as fc from "fast-check"
import { selectorWhere } from "./SelectorSql.ts"
import * as TestDatabase from "./TestDatabase.ts"

type Labels = Readonly<Record<string, string>>

const selector = (text: string): Selector => Result.getOrThrow(parseSelector(text))

const keyAlphabet = ["a", "b", "svc/ns/env", "x.io/team", "__proto__", "constructor"]
const valueAlphabet = ["", "1", "prod", "dev"]
const arbKey = fc.constantFrom(...keyAlphabet)
const arbValue = fc.constantFrom(...valueAlphabet)
const arbLabels: fc.Arbitrary<Labels> = fc
  .uniqueArray(fc.tuple(arbKey, arbValue), { selector: ([key]) => key, maxLength: keyAlphabet.length })
  .map((entries) => Object.fromEntries(entries))
const arbRequirement: fc.Arbitrary<Requirement> = fc.oneof(
  fc.record({ _tag: fc.constant("Equals" as const), key: arbKey, value: arbValue }),
  fc.record({ _tag: fc.constant("NotEquals" as const), key: arbKey, value: arbValue }),
  fc.record({ _tag: fc.constant("Exists" as const), key: arbKey }),
  fc.record({ _tag: fc.constant("NotExists" as const), key: arbKey })
)
const arbSelector: fc.Arbitrary<Selector> = fc
  .array(arbRequirement, { maxLength: 4 })
  .map((requirements) => ({ requirements, source: "" }))

const rows: ReadonlyArray<Labels> = [
  {},
  { a: "1" },
  { a: "" },
  { a: "prod", b: "dev" },
  { "svc/ns/env": "prod", "x.io/team": "dev" },
  JSON.parse('{"__proto__":"1","constructor":"prod"}') as Labels,
  { b: "1", constructor: "" }
]

// Same scenarios on PostgreSQL and PGlite: SQL must select exactly the rows `matches` accepts.
for (const [backend, db] of TestDatabase.backends) {
  layer(db, { timeout: "60 seconds" })(`selectorWhere (${backend})`, (it) => {
    const createTable = (sql: SqlClient.SqlClient, table: string) =>
      Effect.andThen(
        sql`CREATE TABLE ${sql(table)} (id int PRIMARY KEY, labels jsonb NOT NULL)`,
        sql`CREATE INDEX ${sql(`${table}_labels`)} ON ${sql(table)} USING gin (labels)`
      )

    const fill = (sql: SqlClient.SqlClient, table: string, labelSets: ReadonlyArray<Labels>) => {
      const values = labelSets.map((labels, id) => ({ id, labels: PgTypes.jsonb(labels) }))
      return Arr.isArrayNonEmpty(values) ? sql`INSERT INTO ${sql(table)} ${sql.insert(values)}` : Effect.void
    }

    // Index scans are forced so the GIN operator classes, not a sequential scan, answer positive clauses.
    const selectIds = (sql: SqlClient.SqlClient, table: string, s: Selector, column = "labels") =>
      sql.withTransaction(
        Effect.andThen(
          sql`SET LOCAL enable_seqscan = off`,
          Effect.map(
            sql<{ id: number }>`SELECT id FROM ${sql(table)} t WHERE ${selectorWhere(sql, s, column)} ORDER BY id`,
            (found) => found.map((row) => row.id)
          )
        )
      )

    const expectedIds = (labelSets: ReadonlyArray<Labels>, s: Selector) =>
      labelSets.flatMap((labels, id) => (matches(s, labels) ? [id] : []))

    it.effect("selects rows for each form", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* createTable(sql, "selector_examples")
        yield* fill(sql, "selector_examples", rows)
        const cases: ReadonlyArray<readonly [string, ReadonlyArray<number>]> = [
          ["", [0, 1, 2, 3, 4, 5, 6]],
          ["a=1", [1]],
          ["a==", [2]],
          ["a!=1", [0, 2, 3, 4, 5, 6]],
          ["a", [1, 2, 3]],
          ["!a", [0, 4, 5, 6]],
          ["svc/ns/env=prod,x.io/team", [4]],
          ["__proto__=1", [5]],
          ["__proto__", [5]],
          ["!__proto__,constructor", [6]],
          ["constructor!=prod", [0, 1, 2, 3, 4, 6]],
          ["a,!a", []],
          ["a=1,a=prod", []]
        ]
        for (const [text, ids] of cases) {
          assert.deepStrictEqual(yield* selectIds(sql, "selector_examples", selector(text)), ids, text)
          assert.deepStrictEqual(expectedIds(rows, selector(text)), ids, `matches: ${text}`)
        }
        assert.deepStrictEqual(yield* selectIds(sql, "selector_examples", selector("b=1,a!=x"), "t.labels"), [6])
      })
    )

    it.effect("binds keys and values as parameters and uses the GIN index", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* createTable(sql, "selector_plan")
        yield* fill(sql, "selector_plan", [{ "it's": "x" }, { "a?b": "" }])
        const s: Selector = {
          requirements: [
            { _tag: "Exists", key: "it's" },
            { _tag: "Equals", key: "it's", value: "x" }
          ],
          source: ""
        }
        const where = selectorWhere(sql, s, "labels")
        const [text, params] = sql`${where}`.compile()
        assert.strictEqual(text, `("labels" ? $1 AND "labels" @> $2)`)
        assert.deepStrictEqual(params, ["it's", PgTypes.jsonb({ "it's": "x" })])
        assert.deepStrictEqual(yield* selectIds(sql, "selector_plan", s), [0])
        assert.deepStrictEqual(
          yield* selectIds(sql, "selector_plan", { requirements: [{ _tag: "Exists", key: "a?b" }], source: "" }),
          [1]
        )
        const plan = yield* sql.withTransaction(
          Effect.andThen(
            sql`SET LOCAL enable_seqscan = off`,
            sql`EXPLAIN SELECT id FROM selector_plan WHERE ${where}`.values
          )
        )
        assert.include(plan.map((row) => String(row[0])).join("\n"), "Bitmap Index Scan on selector_plan_labels")
      })
    )

    it.effect("agrees with matches on generated rows and selectors", () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* createTable(sql, "selector_props")
        const property = fc.asyncProperty(
          fc.array(arbLabels, { maxLength: 12 }),
          fc.array(arbSelector, { minLength: 1, maxLength: 4 }),
          (labelSets, selectors) =>
            Effect.runPromise(
              Effect.gen(function* () {
                yield* sql`DELETE FROM selector_props`
                yield* fill(sql, "selector_props", labelSets)
                for (const s of selectors) {
                  assert.deepStrictEqual(yield* selectIds(sql, "selector_props", s), expectedIds(labelSets, s))
                }
              })
            )
        )
        yield* Effect.promise(() => fc.assert(property, { numRuns: 150 }))
      })
    )
  })
}
