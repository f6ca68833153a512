/**
 * Storage operations every resource table shares (spec 2.2): live lookups, inserts and updates
 * that report name collisions as `NameTaken` (never constraint text), soft deletes that release
 * the name, keyset pages, and the label-propagation outbox (spec 2.4 rule 3).
 */
import * as PgTypes from "@effect/sql-pg/PgTypes"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { AccessFilter } from "@svc/domain/AccessFilter"
import type { NamespaceFilter } from "@svc/domain/Resource"
import type { Selector } from "@svc/domain/Selector"
import { accessWhere, escapeLike, NameTaken, namespaceWhere, selectPage, type SortColumn } from "./ResourceSql.ts"
import { selectorWhere } from "./SelectorSql.ts"

/** The resource tables of the main database. */
export type TableName = "namespaces" | "actors" | "connectors" | "connections" | "keys" | "rate_limits" | "webhooks"

/** The identity column of each table: a namespace is identified by its path. */
export const idColumnOf = (table: TableName): "id" | "path" => (table === "namespaces" ? "path" : "id")

/** A JSONB parameter (labels, annotations, definitions). */
export const jsonb = PgTypes.jsonb

/** Which parent's change must be pushed to descendants. */
export type PropagationParent = "namespace" | "connector"

/** One queued propagation. */
export interface PropagationTask {
  readonly id: string
  readonly parentType: PropagationParent
  readonly parentId: string
}

/** One page request of a resource list: every filter is ANDed; `access` is always applied. */
export interface ListSpec {
  readonly table: TableName
  readonly access: AccessFilter
  readonly namespace: NamespaceFilter | undefined
  readonly name: string | undefined
  readonly selector: Selector | undefined
  /** Column equality filters (`state`, `type`, `connector_id`…), column names in camelCase. */
  readonly equals: Readonly<Record<string, string>>
  readonly sort: SortColumn
  readonly direction: "ASC" | "DESC"
  readonly after: { readonly value: string | null; readonly id: string } | undefined
  readonly limit: number
}

/** Storage shared by all resource types. Decoding failures of stored rows are defects. */
export class ResourceRepo extends Context.Service<
  ResourceRepo,
  {
    readonly findLive: <S extends Schema.Top>(
      table: TableName,
      id: string,
      schema: S,
      options?: { readonly forUpdate?: boolean }
    ) => Effect.Effect<Option.Option<S["Type"]>, SqlError, S["DecodingServices"]>
    readonly insert: (table: TableName, row: Record<string, unknown>) => Effect.Effect<void, NameTaken | SqlError>
    /** Updates a live row; false when there is none. */
    readonly update: (
      table: TableName,
      id: string,
      set: Record<string, unknown>
    ) => Effect.Effect<boolean, NameTaken | SqlError>
    readonly softDelete: (table: TableName, id: string, now: Date) => Effect.Effect<boolean, SqlError>
    readonly list: <S extends Schema.Top>(
      spec: ListSpec,
      schema: S
    ) => Effect.Effect<
      { readonly rows: ReadonlyArray<S["Type"]>; readonly more: boolean },
      SqlError,
      S["DecodingServices"]
    >
    /** True when `path` has live child namespaces or any live resource in it or below. */
    readonly namespaceInUse: (path: string) => Effect.Effect<boolean, SqlError>
    readonly enqueuePropagation: (
      parentType: PropagationParent,
      parentId: string,
      now: Date
    ) => Effect.Effect<void, SqlError>
    readonly pendingPropagations: (limit: number) => Effect.Effect<ReadonlyArray<PropagationTask>, SqlError>
    /** Removes the queued tasks of one parent up to and including `upToId`. */
    readonly completePropagations: (
      parentType: PropagationParent,
      parentId: string,
      upToId: string
    ) => Effect.Effect<void, SqlError>
    readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
  }
>()("@svc/sql/ResourceRepo") {
  /** Requires a `SqlClient` with the default name transforms and a migrated main schema. */
  static readonly layer: Layer.Layer<ResourceRepo, never, SqlClient.SqlClient> = Layer.effect(
    ResourceRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const nameTaken = (error: SqlError): Effect.Effect<never, NameTaken | SqlError> =>
        error.reason._tag === "UniqueViolation"
          ? Effect.fail(new NameTaken({ constraint: error.reason.constraint }))
          : Effect.fail(error)
      const decodeAll = <S extends Schema.Top>(schema: S, rows: ReadonlyArray<unknown>) =>
        Schema.decodeUnknownEffect(Schema.Array(schema))(rows).pipe(Effect.orDie)

      const findLive = <S extends Schema.Top>(
        table: TableName,
        id: string,
        schema: S,
        options?: { readonly forUpdate?: boolean }
      ) =>
        Effect.flatMap(
          sql`SELECT * FROM ${sql(table)} WHERE ${sql(idColumnOf(table))} = ${id} AND deleted_at IS NULL
            ${options?.forUpdate === true ? sql`FOR UPDATE` : sql``}`,
          (rows) =>
            rows.length === 0
              ? Effect.succeed(Option.none<S["Type"]>())
              : Effect.map(decodeAll(schema, rows.slice(0, 1)), (decoded) => Option.some(decoded[0] as S["Type"]))
        ).pipe(Effect.withSpan("ResourceRepo.findLive", { attributes: { table } }))

      const insert = (table: TableName, row: Record<string, unknown>) =>
        sql`INSERT INTO ${sql(table)} ${sql.insert(row)}`.pipe(
          Effect.asVoid,
          Effect.catchTag("SqlError", nameTaken),
          Effect.withSpan("ResourceRepo.insert", { attributes: { table } })
        )

      const update = (table: TableName, id: string, set: Record<string, unknown>) =>
        sql`UPDATE ${sql(table)} SET ${sql.update(set)}
          WHERE ${sql(idColumnOf(table))} = ${id} AND deleted_at IS NULL RETURNING 1 AS updated`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.catchTag("SqlError", nameTaken),
          Effect.withSpan("ResourceRepo.update", { attributes: { table } })
        )

      const softDelete = (table: TableName, id: string, now: Date) =>
        sql`UPDATE ${sql(table)} SET deleted_at = ${now}, updated_at = ${now}
          WHERE ${sql(idColumnOf(table))} = ${id} AND deleted_at IS NULL RETURNING 1 AS deleted`.pipe(
          Effect.map((rows) => rows.length > 0),
          Effect.withSpan("ResourceRepo.softDelete", { attributes: { table } })
        )

      const list = <S extends Schema.Top>(spec: ListSpec, schema: S) => {
        const idColumn = idColumnOf(spec.table)
        const where = [sql`deleted_at IS NULL`, accessWhere(sql, spec.access, { namespace: "namespace", id: idColumn })]
        if (spec.namespace !== undefined) where.push(namespaceWhere(sql, spec.namespace))
        if (spec.name !== undefined) where.push(sql`name = ${spec.name}`)
        if (spec.selector !== undefined) where.push(selectorWhere(sql, spec.selector, "labels"))
        for (const [column, value] of Object.entries(spec.equals)) where.push(sql`${sql(column)} = ${value}`)
        const page = { ...spec, idColumn, where }
        return Effect.flatMap(selectPage(sql, page), (rows) =>
          Effect.map(decodeAll(schema, rows.slice(0, spec.limit)), (decoded) => ({
            rows: decoded as ReadonlyArray<S["Type"]>,
            more: rows.length > spec.limit
          }))
        ).pipe(Effect.withSpan("ResourceRepo.list", { attributes: { table: spec.table } }))
      }

      const namespaceInUse = (path: string) => {
        const below = `${escapeLike(path)}.%`
        const tables = ["actors", "connectors", "connections", "keys", "rate_limits", "webhooks"] as const
        const checks = [
          sql`EXISTS (SELECT 1 FROM namespaces WHERE deleted_at IS NULL AND path LIKE ${below})`,
          ...tables.map(
            (table) =>
              sql`EXISTS (SELECT 1 FROM ${sql(table)} WHERE deleted_at IS NULL AND (namespace = ${path} OR namespace LIKE ${below}))`
          )
        ]
        return sql<{ inUse: boolean }>`SELECT (${sql.or(checks)}) AS in_use`.pipe(
          Effect.map((rows) => rows[0]?.inUse === true)
        )
      }

      const enqueuePropagation = (parentType: PropagationParent, parentId: string, now: Date) =>
        sql`INSERT INTO label_propagations ${sql.insert({ parentType, parentId, enqueuedAt: now })}`.pipe(Effect.asVoid)

      const pendingPropagations = (limit: number) =>
        sql<{ id: string | number; parentType: PropagationParent; parentId: string }>`
          SELECT id, parent_type, parent_id FROM label_propagations ORDER BY id LIMIT ${limit}`.pipe(
          Effect.map((rows) => rows.map((row) => ({ ...row, id: String(row.id) })))
        )

      const completePropagations = (parentType: PropagationParent, parentId: string, upToId: string) =>
        sql`DELETE FROM label_propagations
          WHERE parent_type = ${parentType} AND parent_id = ${parentId} AND id <= CAST(${upToId} AS bigint)`.pipe(
          Effect.asVoid
        )

      return ResourceRepo.of({
        findLive,
        insert,
        update,
        softDelete,
        list,
        namespaceInUse,
        enqueuePropagation,
        pendingPropagations,
        completePropagations,
        withTransaction: sql.withTransaction
      })
    })
  )
}
