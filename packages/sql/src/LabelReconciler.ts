/**
 * Carry-forward reconciliation (spec 2.4 rules 3–4): recomputes the materialised labels of every
 * live resource under a namespace subtree, or of every connection of a connector, from its
 * parents' current labels, and rewrites the rows that drifted. Idempotent, so it serves both the
 * background propagation after a parent change and the periodic consistency checker. Writes are
 * compare-and-swap on the old label set: a row changed concurrently by a user write was already
 * materialised from current parents by that write and is left alone.
 */
import {
  type Labels,
  type LabelParent,
  materializeLabels,
  ownSystemLabels,
  type ResourceToken,
  sameLabels,
  userLabelsOf
} from "@svc/domain/Labels"
import { parentNamespace } from "@svc/domain/Resource"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, type Statement } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { idColumnOf, jsonb, type TableName } from "./ResourceRepo.ts"
import { escapeLike } from "./ResourceSql.ts"

const LabelRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  namespace: Schema.String,
  labels: Schema.Record(Schema.String, Schema.String),
  type: Schema.optionalKey(Schema.String)
})
type LabelRow = typeof LabelRow.Type
const ConnectionLabelRow = Schema.Struct({ ...LabelRow.fields, connectorId: Schema.String })
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(LabelRow))
const decodeConnectionRows = Schema.decodeUnknownEffect(Schema.Array(ConnectionLabelRow))

/** How many rows one reconciliation rewrote. */
export interface ReconcileResult {
  readonly updated: number
}

/**
 * Told the ids of connections just rewritten, after each batch is committed (spec 2.4 rule 5: the
 * proxy's caches drop them so new requests' label snapshots reflect the change at once).
 */
export type ConnectionsRewritten = (ids: ReadonlyArray<string>) => Effect.Effect<void>

const ignoreRewritten: ConnectionsRewritten = () => Effect.void

const batchSize = 500

/** Label reconciliation over the main database. */
export class LabelReconciler extends Context.Service<
  LabelReconciler,
  {
    /** Every resource in `path` and below (namespaces, actors, keys, rate limits, connectors, connections). */
    readonly namespaceSubtree: (
      path: string,
      rewritten?: ConnectionsRewritten
    ) => Effect.Effect<ReconcileResult, SqlError>
    /** Every live connection of one connector. */
    readonly connector: (
      connectorId: string,
      rewritten?: ConnectionsRewritten
    ) => Effect.Effect<ReconcileResult, SqlError>
    /** The whole database (the consistency checker). */
    readonly all: (rewritten?: ConnectionsRewritten) => Effect.Effect<ReconcileResult, SqlError>
  }
>()("@svc/sql/LabelReconciler") {
  /** Requires a `SqlClient` with the default name transforms and a migrated main schema. */
  static readonly layer: Layer.Layer<LabelReconciler, never, SqlClient.SqlClient> = Layer.effect(
    LabelReconciler,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const inSubtree = (path: string): Statement.Fragment =>
        sql`(namespace = ${path} OR namespace LIKE ${`${escapeLike(path)}.%`})`

      const select = (table: TableName, where: Statement.Fragment) =>
        Effect.flatMap(
          sql`SELECT ${sql(idColumnOf(table))} AS id, name, namespace, labels${table === "connectors" ? sql`, type` : sql``}
            FROM ${sql(table)}
            WHERE deleted_at IS NULL AND ${where}`,
          (rows) => Effect.orDie(decodeRows(rows))
        )

      const namespaceLabels = (paths: ReadonlyArray<string>) =>
        paths.length === 0
          ? Effect.succeed(new Map<string, Labels>())
          : Effect.map(select("namespaces", sql`path IN ${sql.in(paths)}`), (rows) => {
              const out = new Map<string, Labels>()
              for (const row of rows) out.set(row.id, row.labels)
              return out
            })

      /** CAS-writes the rows whose materialised labels differ; returns how many were written. */
      const write = (
        table: TableName,
        changes: ReadonlyArray<{ id: string; labels: Labels; old: Labels }>,
        rewritten: ConnectionsRewritten = ignoreRewritten
      ) =>
        Effect.gen(function* () {
          let updated = 0
          for (let i = 0; i < changes.length; i += batchSize) {
            const batch = changes.slice(i, i + batchSize)
            const rows = yield* sql<{ readonly id: string }>`
              UPDATE ${sql(table)} AS t SET labels = v.labels
              FROM jsonb_to_recordset(${jsonb(batch)}) AS v(id text, labels jsonb, old jsonb)
              WHERE t.${sql(idColumnOf(table))} = v.id AND t.labels = v.old AND t.deleted_at IS NULL
              RETURNING v.id AS id`
            updated += rows.length
            if (rows.length > 0) yield* rewritten(rows.map((row) => row.id))
          }
          return updated
        })

      const recompute = (
        rt: ResourceToken,
        row: LabelRow,
        parents: ReadonlyArray<LabelParent>
      ): { id: string; labels: Labels; old: Labels } | undefined => {
        const labels = materializeLabels({
          rt,
          id: row.id,
          name: row.name,
          namespace: row.namespace,
          userLabels: userLabelsOf(row.labels),
          parents,
          system: ownSystemLabels(rt, row)
        })
        return sameLabels(labels, row.labels) ? undefined : { id: row.id, labels, old: row.labels }
      }

      const connections = (
        where: Statement.Fragment,
        known: Map<string, Labels>,
        namespaces: Map<string, Labels>,
        rewritten: ConnectionsRewritten
      ) =>
        Effect.gen(function* () {
          const rows = yield* Effect.flatMap(
            sql`SELECT id, name, namespace, labels, connector_id FROM connections WHERE deleted_at IS NULL AND ${where}`,
            (raw) => Effect.orDie(decodeConnectionRows(raw))
          )
          const missingConnectors = [...new Set(rows.map((row) => row.connectorId))].filter((id) => !known.has(id))
          if (missingConnectors.length > 0) {
            for (const row of yield* select("connectors", sql`id IN ${sql.in(missingConnectors)}`)) {
              known.set(row.id, row.labels)
            }
          }
          const missingNamespaces = [...new Set(rows.map((row) => row.namespace))].filter((ns) => !namespaces.has(ns))
          for (const [path, labels] of yield* namespaceLabels(missingNamespaces)) namespaces.set(path, labels)
          const changes = []
          for (const row of rows) {
            const connector = known.get(row.connectorId)
            const namespace = namespaces.get(row.namespace)
            if (connector === undefined || namespace === undefined) continue
            // The namespace is the nearer parent: its `svc/ns/…` labels win over the connector's.
            const change = recompute("cxn", row, [
              { rt: "cxr", labels: connector },
              { rt: "ns", labels: namespace }
            ])
            if (change !== undefined) changes.push(change)
          }
          return yield* write("connections", changes, rewritten)
        })

      const namespaceSubtree = Effect.fn("LabelReconciler.namespaceSubtree")(function* (
        path: string,
        rewritten: ConnectionsRewritten = ignoreRewritten
      ) {
        let updated = 0
        const resolved = new Map<string, Labels>()
        const top = parentNamespace(path)
        if (top !== undefined) for (const [p, labels] of yield* namespaceLabels([top])) resolved.set(p, labels)

        const namespaces = [...(yield* select("namespaces", inSubtree(path)))].sort(
          (a, b) => a.id.split(".").length - b.id.split(".").length
        )
        const namespaceChanges = []
        for (const row of namespaces) {
          const parentPath = parentNamespace(row.id)
          const parent = parentPath === undefined ? undefined : resolved.get(parentPath)
          if (parentPath !== undefined && parent === undefined) continue
          const named = { ...row, name: row.id.slice(row.id.lastIndexOf(".") + 1), namespace: row.id }
          const change = recompute("ns", named, parent === undefined ? [] : [{ rt: "ns", labels: parent }])
          resolved.set(row.id, change?.labels ?? row.labels)
          if (change !== undefined) namespaceChanges.push(change)
        }
        updated += yield* write("namespaces", namespaceChanges)

        const connectors = new Map<string, Labels>()
        const simple: ReadonlyArray<readonly [TableName, ResourceToken]> = [
          ["actors", "act"],
          ["keys", "key"],
          ["rate_limits", "rl"],
          ["webhooks", "wh"],
          ["connectors", "cxr"]
        ]
        for (const [table, rt] of simple) {
          const changes = []
          for (const row of yield* select(table, inSubtree(path))) {
            const namespace = resolved.get(row.namespace)
            if (namespace === undefined) continue
            const change = recompute(rt, row, [{ rt: "ns", labels: namespace }])
            if (table === "connectors") connectors.set(row.id, change?.labels ?? row.labels)
            if (change !== undefined) changes.push(change)
          }
          updated += yield* write(table, changes)
        }
        updated += yield* connections(inSubtree(path), connectors, resolved, rewritten)
        return { updated }
      })

      const connector = Effect.fn("LabelReconciler.connector")(function* (
        connectorId: string,
        rewritten: ConnectionsRewritten = ignoreRewritten
      ) {
        const rows = yield* select("connectors", sql`id = ${connectorId}`)
        const known = new Map<string, Labels>()
        for (const row of rows) known.set(row.id, row.labels)
        if (known.size === 0) return { updated: 0 }
        return { updated: yield* connections(sql`connector_id = ${connectorId}`, known, new Map(), rewritten) }
      })

      return LabelReconciler.of({
        namespaceSubtree,
        connector,
        all: (rewritten) =>
          Effect.suspend(() => namespaceSubtree("root", rewritten)).pipe(Effect.withSpan("LabelReconciler.all"))
      })
    })
  )
}
