/**
 * Resource snapshots (spec 4.7): `ResourceSampler` reads every live resource of the main
 * database with the groupBy dimensions of its `resources.*` metric; `ResourceSnapshotRepo` stores
 * one snapshot in the app-metrics database and aggregates the snapshots a query reads.
 */
import type { AccessFilter } from "@svc/domain/AccessFilter"
import type { NamespaceFilter } from "@svc/domain/Resource"
import type { Selector } from "@svc/domain/Selector"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { jsonb } from "./ResourceRepo.ts"
import { accessWhere, namespaceWhere } from "./ResourceSql.ts"
import { selectorWhere } from "./SelectorSql.ts"

/** The kinds sampled, as their metric names end (`resources.<kind>`). */
export const snapshotKinds = [
  "connections",
  "actors",
  "connectors",
  "connector_versions",
  "namespaces",
  "rate_limits"
] as const
export type SnapshotKind = (typeof snapshotKinds)[number]

/** One live resource at the moment of a snapshot. */
export interface ResourceSample {
  readonly kind: SnapshotKind
  readonly resourceId: string
  readonly namespace: string
  /** Its groupBy dimensions (spec 4.7), as text. */
  readonly dims: Readonly<Record<string, string>>
  readonly labels: Readonly<Record<string, string>>
}

type Row = {
  readonly id: string
  readonly namespace: string
  readonly labels: Record<string, string>
  readonly [dim: string]: unknown
}

const text = (value: unknown): string => (value === null || value === undefined ? "" : String(value))

/** Reads every live resource of the main database. */
export class ResourceSampler extends Context.Service<
  ResourceSampler,
  { readonly sample: Effect.Effect<ReadonlyArray<ResourceSample>, SqlError> }
>()("@svc/sql/ResourceSampler") {
  static readonly layer: Layer.Layer<ResourceSampler, never, SqlClient.SqlClient> = Layer.effect(
    ResourceSampler,
    Effect.gen(function* () {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()
      const of = (kind: SnapshotKind, rows: ReadonlyArray<Row>, dims: ReadonlyArray<string>) =>
        rows.map(
          (row): ResourceSample => ({
            kind,
            resourceId: row.id,
            namespace: row.namespace,
            dims: Object.fromEntries(dims.map((dim) => [dim, text(row[dim])])),
            labels: row.labels
          })
        )
      const sample = Effect.gen(function* () {
        const connections = yield* sql<Row>`
          SELECT id, namespace, labels, state, health_state, connector_id, connector_version
          FROM connections WHERE deleted_at IS NULL`
        const actors = yield* sql<Row>`SELECT id, namespace, labels FROM actors WHERE deleted_at IS NULL`
        const connectors = yield* sql<Row>`
          SELECT id, namespace, labels, state, version AS connector_version FROM connectors WHERE deleted_at IS NULL`
        const versions = yield* sql<Row>`
          SELECT v.connector_id || '@' || v.version AS id, c.namespace, c.labels, v.state, v.connector_id,
            v.version AS connector_version
          FROM connector_versions v JOIN connectors c ON c.id = v.connector_id WHERE c.deleted_at IS NULL`
        const namespaces = yield* sql<Row>`
          SELECT path AS id, path AS namespace, labels, 'active' AS state FROM namespaces WHERE deleted_at IS NULL`
        const rateLimits = yield* sql<Row>`SELECT id, namespace, labels, mode FROM rate_limits WHERE deleted_at IS NULL`
        return [
          ...of("connections", connections, ["state", "health_state", "connector_id", "connector_version"]),
          ...of("actors", actors, ["namespace"]),
          ...of("connectors", connectors, ["state", "connector_version", "namespace"]),
          ...of("connector_versions", versions, ["state", "connector_id", "connector_version", "namespace"]),
          ...of("namespaces", namespaces, ["state", "namespace"]),
          ...of("rate_limits", rateLimits, ["mode", "namespace"])
        ]
      }).pipe(Effect.withSpan("ResourceSampler.sample"))
      return ResourceSampler.of({ sample })
    })
  )
}

/** One aggregation over the snapshots taken at `takenAt`. */
export interface SnapshotAggregation {
  readonly kind: SnapshotKind
  readonly takenAt: ReadonlyArray<Date>
  readonly access: AccessFilter
  readonly namespace: NamespaceFilter | undefined
  readonly selector: Selector | undefined
  readonly groupBy: ReadonlyArray<string>
}

/** Rows per INSERT: 6 columns × 5000 rows stays under PostgreSQL's 65535 parameters. */
const insertChunk = 5000

/** Snapshots in the app-metrics database. */
export class ResourceSnapshotRepo extends Context.Service<
  ResourceSnapshotRepo,
  {
    readonly insert: (takenAt: Date, samples: ReadonlyArray<ResourceSample>) => Effect.Effect<void, SqlError>
    /** The times of the snapshots of `kind` in [`from`, `to`], and the latest one before `from`. */
    readonly times: (kind: SnapshotKind, from: Date, to: Date) => Effect.Effect<ReadonlyArray<Date>, SqlError>
    /** Counts per snapshot time and groupBy values (text, `""` when absent). */
    readonly aggregate: (
      query: SnapshotAggregation
    ) => Effect.Effect<
      ReadonlyArray<{ readonly takenAt: Date; readonly groups: ReadonlyArray<string>; readonly value: number }>,
      SqlError
    >
  }
>()("@svc/sql/ResourceSnapshotRepo") {
  static readonly layer: Layer.Layer<ResourceSnapshotRepo, never, SqlClient.SqlClient> = Layer.effect(
    ResourceSnapshotRepo,
    Effect.gen(function* () {
      const sql = (yield* SqlClient.SqlClient).withoutTransforms()

      const insert = Effect.fn("ResourceSnapshotRepo.insert")(function* (
        takenAt: Date,
        samples: ReadonlyArray<ResourceSample>
      ) {
        yield* sql.withTransaction(
          Effect.gen(function* () {
            for (let from = 0; from < samples.length; from += insertChunk) {
              const rows = samples.slice(from, from + insertChunk).map((sample) => ({
                taken_at: takenAt,
                kind: sample.kind,
                resource_id: sample.resourceId,
                namespace: sample.namespace,
                dims: jsonb(sample.dims),
                labels: jsonb(sample.labels)
              }))
              const [first, ...rest] = rows
              if (first !== undefined) yield* sql`INSERT INTO resource_snapshots ${sql.insert([first, ...rest])}`
            }
          })
        )
      })

      const times = Effect.fn("ResourceSnapshotRepo.times")(function* (kind: SnapshotKind, from: Date, to: Date) {
        const rows = yield* sql<{ readonly taken_at: Date | string }>`
          SELECT DISTINCT taken_at FROM resource_snapshots
          WHERE kind = ${kind} AND taken_at <= ${to} AND taken_at >= COALESCE(
            (SELECT max(taken_at) FROM resource_snapshots WHERE kind = ${kind} AND taken_at < ${from}), ${from})
          ORDER BY taken_at`
        return rows.map((row) => new Date(row.taken_at))
      })

      const aggregate = Effect.fn("ResourceSnapshotRepo.aggregate")(function* (query: SnapshotAggregation) {
        if (query.takenAt.length === 0) return []
        const where = [
          sql`kind = ${query.kind}`,
          sql`taken_at IN ${sql.in(query.takenAt)}`,
          accessWhere(sql, query.access, { namespace: "namespace", id: "resource_id" })
        ]
        if (query.namespace !== undefined) where.push(namespaceWhere(sql, query.namespace))
        if (query.selector !== undefined) where.push(selectorWhere(sql, query.selector, "labels"))
        const groups = query.groupBy.map((key, i) => sql`COALESCE(dims ->> ${key}, '') AS ${sql(`g${i}`)}`)
        const rows = yield* sql<Record<string, unknown>>`
          SELECT ${sql.csv([sql`taken_at`, ...groups, sql`CAST(count(*) AS float8) AS value`])}
          FROM resource_snapshots WHERE ${sql.and(where)}
          GROUP BY ${sql.literal(["1", ...query.groupBy.map((_, i) => String(i + 2))].join(", "))}`
        return rows.map((row) => ({
          takenAt: new Date(row.taken_at as Date | string),
          groups: query.groupBy.map((_, i) => text(row[`g${i}`])),
          value: Number(row.value)
        }))
      })

      return ResourceSnapshotRepo.of({ insert, times, aggregate })
    })
  )
}
