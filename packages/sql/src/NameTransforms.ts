/**
 * Name transforms shared by both clients (STYLE: snake_case SQL, camelCase TypeScript).
 * Identifiers built with `sql("name")` / `sql.insert` / `sql.update` go through `queryNames`;
 * result column names go through `resultNames`. JSON values are never transformed (labels,
 * annotations and permissions keep their keys). effect/cluster and effect/sql's `Migrator`
 * call `withoutTransforms()`, which drops both transforms.
 */
import { String as Str } from "effect"

/** camelCase identifier → snake_case SQL name. */
export const queryNames: (name: string) => string = Str.camelToSnake

/** snake_case column → camelCase field. */
export const resultNames: (name: string) => string = Str.snakeToCamel
