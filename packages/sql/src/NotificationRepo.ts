/**
 * Connection notifications (spec 2.10, 2.11, 4.4): at most one active notice per (connection,
 * key), updated in place when raised again; the severity rule between required-action keys
 * applied in the same transaction; lists filtered by permission in SQL; `viewed` per actor.
 * Only notices of live connections are listed or marked.
 *
 * A notice may instead belong to a webhook endpoint (main schema 0010): a namespace-level notice
 * (the endpoint was auto-disabled) written by `WebhookRepo.disableFailing`, listed only to actors
 * who may also read that endpoint (`webhookAccess`), resolved when the endpoint is re-enabled or
 * deleted.
 */
import type { AccessFilter } from "@svc/domain/AccessFilter"
import { NotificationLevel, NotificationMetadata, type SeverityRule } from "@svc/domain/Notification"
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { jsonb } from "./ResourceRepo.ts"
import { accessWhere } from "./ResourceSql.ts"

/** A notice to raise on a connection; `id` is used only when a new row is inserted. */
export interface NewNotice {
  readonly id: string
  readonly connectionId: string
  readonly key: string
  readonly level: NotificationLevel
  readonly title: string
  readonly message: string
  readonly actionUrl: string | null
  readonly metadata: NotificationMetadata
  readonly now: Date
}

/**
 * What `upsert` did: inserted a notice, updated the active one (content changed: the views are
 * reset so it surfaces again), found it unchanged, was blocked by a more severe active notice
 * (`id` is that notice), or found no live connection.
 */
export type UpsertResult =
  | { readonly _tag: "Created" | "Updated" | "Unchanged" | "Blocked"; readonly id: string }
  | { readonly _tag: "NoConnection" }

/** An active notice of a live connection or live webhook endpoint. */
export const NotificationRow = Schema.Struct({
  id: Schema.String,
  /** The connection of a connection notice; null on a webhook endpoint's notice. */
  connectionId: Schema.NullOr(Schema.String),
  /** The endpoint of a webhook endpoint's notice; null on a connection notice. */
  webhookId: Schema.NullOr(Schema.String),
  namespace: Schema.String,
  key: Schema.String,
  level: NotificationLevel,
  title: Schema.String,
  message: Schema.String,
  actionUrl: Schema.NullOr(Schema.String),
  metadata: NotificationMetadata,
  createdAt: Schema.DateTimeUtcFromDate,
  updatedAt: Schema.DateTimeUtcFromDate
})
export type NotificationRow = typeof NotificationRow.Type

/** A listed notice with whether the listing actor has viewed it. */
export const ListedNotificationRow = Schema.Struct({ ...NotificationRow.fields, viewed: Schema.Boolean })
export type ListedNotificationRow = typeof ListedNotificationRow.Type

/** One page request: newest first, keyset on (created_at, id). */
export interface NotificationQuery {
  readonly access: AccessFilter
  /** Who may read webhook endpoints (`webhooks:get`): a webhook endpoint's notice must pass it too. */
  readonly webhookAccess: AccessFilter
  readonly actorId: string
  readonly includeViewed: boolean
  readonly after: { readonly createdAt: string; readonly id: string } | undefined
  readonly limit: number
}

const decodeRows = Schema.decodeUnknownEffect(Schema.Array(NotificationRow))
const decodeListed = Schema.decodeUnknownEffect(Schema.Array(ListedNotificationRow))
const noRule: SeverityRule = { supersedes: [], blockedBy: [] }

/** Storage of notices and per-actor views. Decoding failures of stored rows are defects. */
export class NotificationRepo extends Context.Service<
  NotificationRepo,
  {
    /** Raises a notice under `rule` (spec 2.11); concurrent calls for one key never duplicate it. */
    readonly upsert: (notice: NewNotice, rule?: SeverityRule) => Effect.Effect<UpsertResult, SqlError>
    /** Resolves the active notice of `key` (spec 2.10 `notifications.unset`); false when there was none. */
    readonly resolve: (connectionId: string, key: string, now: Date) => Effect.Effect<boolean, SqlError>
    /**
     * Whether the connection's active notice of `key` was raised by a version migration (its
     * metadata names the migration): only re-authorising resolves that one, not a token refresh.
     */
    readonly raisedByMigration: (connectionId: string, key: string) => Effect.Effect<boolean, SqlError>
    /** The active notice `id` of a live connection. */
    readonly find: (id: string) => Effect.Effect<Option.Option<NotificationRow>, SqlError>
    readonly list: (query: NotificationQuery) => Effect.Effect<
      {
        readonly rows: ReadonlyArray<ListedNotificationRow>
        readonly more: boolean
      },
      SqlError
    >
    /**
     * Marks the active notices among `ids` that pass every filter of `access` (and, for a
     * webhook endpoint's notice, `webhookAccess` when given) viewed by `actorId`; returns those
     * ids (already viewed ones included, the first view time kept).
     */
    readonly markViewed: (
      actorId: string,
      ids: ReadonlyArray<string>,
      access: ReadonlyArray<AccessFilter>,
      now: Date,
      webhookAccess?: AccessFilter
    ) => Effect.Effect<ReadonlyArray<string>, SqlError>
  }
>()("@svc/sql/NotificationRepo") {
  /** Requires a `SqlClient` with the default name transforms and a migrated main schema. */
  static readonly layer: Layer.Layer<NotificationRepo, never, SqlClient.SqlClient> = Layer.effect(
    NotificationRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient

      const activeOf = (connectionId: string, keys: ReadonlyArray<string>) =>
        sql<{ id: string }>`SELECT id FROM notifications
          WHERE connection_id = ${connectionId} AND key IN ${sql.in(keys)} AND resolved_at IS NULL
          ORDER BY created_at, id LIMIT 1`

      const write = (notice: NewNotice, rule: SeverityRule) =>
        Effect.gen(function* () {
          // Serialises the notices of one connection, so the severity rule sees the others' writes.
          const connection = yield* sql<{ namespace: string }>`
            SELECT namespace FROM connections WHERE id = ${notice.connectionId} AND deleted_at IS NULL
            FOR NO KEY UPDATE`
          const namespace = connection[0]?.namespace
          if (namespace === undefined) return { _tag: "NoConnection" } as const
          if (rule.blockedBy.length > 0) {
            const blocking = yield* activeOf(notice.connectionId, rule.blockedBy)
            if (blocking[0] !== undefined) return { _tag: "Blocked", id: blocking[0].id } as const
          }
          if (rule.supersedes.length > 0) {
            yield* sql`UPDATE notifications SET resolved_at = ${notice.now}, updated_at = ${notice.now}
              WHERE connection_id = ${notice.connectionId} AND key IN ${sql.in(rule.supersedes)}
                AND resolved_at IS NULL`
          }
          const row = {
            id: notice.id,
            connectionId: notice.connectionId,
            namespace,
            key: notice.key,
            level: notice.level,
            title: notice.title,
            message: notice.message,
            actionUrl: notice.actionUrl,
            metadata: jsonb(notice.metadata),
            createdAt: notice.now,
            updatedAt: notice.now
          }
          // The conflicting row is locked even when the WHERE leaves it unchanged.
          const written = yield* sql<{ id: string }>`
            INSERT INTO notifications ${sql.insert(row)}
            ON CONFLICT (connection_id, key) WHERE resolved_at IS NULL DO UPDATE SET
              namespace = EXCLUDED.namespace, level = EXCLUDED.level, title = EXCLUDED.title,
              message = EXCLUDED.message, action_url = EXCLUDED.action_url, metadata = EXCLUDED.metadata,
              updated_at = EXCLUDED.updated_at
            WHERE (notifications.namespace, notifications.level, notifications.title, notifications.message,
                notifications.action_url, notifications.metadata)
              IS DISTINCT FROM (EXCLUDED.namespace, EXCLUDED.level, EXCLUDED.title, EXCLUDED.message,
                EXCLUDED.action_url, EXCLUDED.metadata)
            RETURNING id`
          const id = written[0]?.id
          if (id === notice.id) return { _tag: "Created", id } as const
          if (id !== undefined) {
            yield* sql`DELETE FROM notification_views WHERE notification_id = ${id}`
            return { _tag: "Updated", id } as const
          }
          const current = yield* activeOf(notice.connectionId, [notice.key])
          const existing = current[0]
          if (existing === undefined) return yield* Effect.die(new Error("active notification vanished while locked"))
          return { _tag: "Unchanged", id: existing.id } as const
        })

      const upsert = (notice: NewNotice, rule: SeverityRule = noRule) =>
        sql.withTransaction(write(notice, rule)).pipe(
          Effect.map((result): UpsertResult => result),
          Effect.withSpan("NotificationRepo.upsert")
        )

      const resolve = Effect.fn("NotificationRepo.resolve")(function* (connectionId: string, key: string, now: Date) {
        const rows = yield* sql`UPDATE notifications SET resolved_at = ${now}, updated_at = ${now}
          WHERE connection_id = ${connectionId} AND key = ${key} AND resolved_at IS NULL RETURNING id`
        return rows.length > 0
      })

      const raisedByMigration = Effect.fn("NotificationRepo.raisedByMigration")(function* (
        connectionId: string,
        key: string
      ) {
        const rows = yield* sql`SELECT 1 FROM notifications
          WHERE connection_id = ${connectionId} AND key = ${key} AND resolved_at IS NULL
            AND metadata -> 'migration' IS NOT NULL`
        return rows.length > 0
      })

      // A notice's subject: its connection or its webhook endpoint, live.
      const subjects = sql`LEFT JOIN connections c ON c.id = n.connection_id
        LEFT JOIN webhooks w ON w.id = n.webhook_id`
      const live = sql`n.resolved_at IS NULL AND ((c.id IS NOT NULL AND c.deleted_at IS NULL)
        OR (w.id IS NOT NULL AND w.deleted_at IS NULL))`
      const webhookWhere = (filter: AccessFilter) =>
        sql`(n.webhook_id IS NULL OR ${accessWhere(sql, filter, { namespace: "n.namespace", id: "n.webhook_id" })})`

      const find = Effect.fn("NotificationRepo.find")(function* (id: string) {
        const rows = yield* sql`SELECT n.* FROM notifications n ${subjects}
          WHERE n.id = ${id} AND ${live}`
        const decoded = yield* Effect.orDie(decodeRows(rows))
        return Option.fromNullishOr(decoded[0])
      })

      const list = Effect.fn("NotificationRepo.list")(function* (query: NotificationQuery) {
        const where = [
          live,
          accessWhere(sql, query.access, { namespace: "n.namespace", id: "n.id" }),
          webhookWhere(query.webhookAccess)
        ]
        if (!query.includeViewed) where.push(sql`v.actor_id IS NULL`)
        if (query.after !== undefined) {
          where.push(sql`(n.created_at, n.id) < (CAST(${query.after.createdAt} AS timestamptz), ${query.after.id})`)
        }
        const rows = yield* sql`
          SELECT n.*, (v.actor_id IS NOT NULL) AS viewed
          FROM notifications n
          ${subjects}
          LEFT JOIN notification_views v ON v.notification_id = n.id AND v.actor_id = ${query.actorId}
          WHERE ${sql.and(where)}
          ORDER BY n.created_at DESC, n.id DESC
          LIMIT ${query.limit + 1}`
        const decoded = yield* Effect.orDie(decodeListed(rows.slice(0, query.limit)))
        return { rows: decoded, more: rows.length > query.limit }
      })

      const markViewed = Effect.fn("NotificationRepo.markViewed")(function* (
        actorId: string,
        ids: ReadonlyArray<string>,
        access: ReadonlyArray<AccessFilter>,
        now: Date,
        webhookAccess?: AccessFilter
      ) {
        if (ids.length === 0) return []
        const where = [
          live,
          sql`n.id IN ${sql.in([...new Set(ids)])}`,
          ...access.map((filter) => accessWhere(sql, filter, { namespace: "n.namespace", id: "n.id" }))
        ]
        if (webhookAccess !== undefined) where.push(webhookWhere(webhookAccess))
        const rows = yield* sql<{ id: string }>`
          WITH visible AS (
            SELECT n.id FROM notifications n ${subjects} WHERE ${sql.and(where)}
          ), marked AS (
            INSERT INTO notification_views (notification_id, actor_id, viewed_at)
            SELECT id, ${actorId}, ${now} FROM visible
            ON CONFLICT (notification_id, actor_id) DO NOTHING
          )
          SELECT id FROM visible ORDER BY id`
        return rows.map((row) => row.id)
      })

      return NotificationRepo.of({ upsert, resolve, raisedByMigration, find, list, markViewed })
    })
  )
}
