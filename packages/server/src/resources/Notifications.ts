/**
 * Connection notifications (spec 2.10, 2.11, 4.4): the actor-filtered list of active notices
 * (visible where the caller may `notifications:list` in the connection's namespace; `viewed` for
 * the caller; `can_action` when the caller may update the connection), marking viewed, and
 * `raise`/`clear` for the services that detect a required action. A webhook endpoint's notice
 * (auto-disabled, issue 34) is visible only where the caller may also `webhooks:get` that
 * endpoint, and `can_action` means `webhooks:update` on it (re-enabling it resolves the notice).
 */
import { accessFilter } from "@svc/domain/AccessFilter"
import { BadRequest, Forbidden, NotFound } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { makeId } from "@svc/domain/Ids"
import {
  type Notification,
  type NotificationInput,
  type NotificationList,
  reauthKey,
  severityRule,
  storedActionUrl
} from "@svc/domain/Notification"
import { isAllowed } from "@svc/domain/PermissionMatcher"
import { decodeCursor, defaultPageSize, encodeCursor } from "@svc/domain/Resource"
import { type ListedNotificationRow, NotificationRepo, type UpsertResult } from "@svc/sql/NotificationRepo"
import { Context, DateTime, Effect, Layer, Option } from "effect"
import * as Kinds from "./ResourceKinds.ts"
import { ResourceOps } from "./ResourceOps.ts"

/** The query of one list call. */
export interface NotificationListRequest {
  readonly includeViewed: boolean
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

const resource = "notifications"
/** A webhook endpoint's notice is shown only to who may read the endpoint. */
const webhookVerb = "get"
const order = { field: "created_at", direction: "DESC" } as const
const invalidCursor = new BadRequest({ error: "the cursor is not valid for this list", code: "invalid_cursor" })
const notFound = (id: string) => new NotFound({ error: `notification ${id} not found`, code: "not_found" })

/** Notification operations for the HTTP handlers and the services that raise notices. */
export class Notifications extends Context.Service<
  Notifications,
  {
    readonly list: (
      actor: AuthenticatedActor,
      request: NotificationListRequest
    ) => Effect.Effect<NotificationList, BadRequest>
    /** 404 when unknown, resolved or invisible; 403 when visible but not `notifications:update`. */
    readonly markViewed: (actor: AuthenticatedActor, id: string) => Effect.Effect<void, NotFound | Forbidden>
    /** Marks the ids the caller may see and update; the others are ignored. */
    readonly markViewedBulk: (actor: AuthenticatedActor, ids: ReadonlyArray<string>) => Effect.Effect<void>
    /** Raises `notice` on a live connection under the spec 2.11 severity rule. */
    readonly raise: (connection: { readonly id: string }, notice: NotificationInput) => Effect.Effect<UpsertResult>
    /** Resolves the connection's active notice of `key`; false when there was none. */
    readonly clear: (connectionId: string, key: string) => Effect.Effect<boolean>
    /** Whether the active re-authentication notice was raised by a version migration (spec 4.3 rule 4). */
    readonly migrationReauthPending: (connectionId: string) => Effect.Effect<boolean>
  }
>()("@svc/server/Notifications") {
  static readonly layerNoDeps: Layer.Layer<Notifications, never, NotificationRepo | ResourceOps> = Layer.effect(
    Notifications,
    Effect.gen(function* () {
      const repo = yield* NotificationRepo
      const ops = yield* ResourceOps
      const nowDate = Effect.map(DateTime.now, (now) => new Date(DateTime.toEpochMillis(now)))

      const may = (actor: AuthenticatedActor, verb: string, namespace: string, id: string) =>
        isAllowed({
          actor,
          restrictions: actor.restrictions,
          request: { namespace, resource, verb, resourceId: id }
        })

      const present = (actor: AuthenticatedActor, row: ListedNotificationRow): Notification => ({
        id: row.id,
        key: row.key,
        level: row.level,
        title: row.title,
        message: row.message,
        action_url: storedActionUrl(row.actionUrl),
        metadata: row.metadata,
        viewed: row.viewed,
        can_action:
          row.webhookId !== null
            ? ops.allowed(actor, Kinds.webhooks, "update", row.namespace, row.webhookId)
            : row.connectionId !== null &&
              ops.allowed(actor, Kinds.connections, "update", row.namespace, row.connectionId),
        created_at: DateTime.formatIso(row.createdAt)
      })

      const list = Effect.fn("Notifications.list")(function* (
        actor: AuthenticatedActor,
        request: NotificationListRequest
      ) {
        let includeViewed = request.includeViewed
        let after: { readonly createdAt: string; readonly id: string } | undefined
        if (request.cursor !== undefined) {
          const state = decodeCursor(request.cursor)
          const filter = state?.filters.include_viewed
          if (state === undefined || state.order.field !== order.field || state.after.value === null) {
            return yield* invalidCursor
          }
          if (filter !== "true" && filter !== "false") return yield* invalidCursor
          includeViewed = filter === "true"
          after = { createdAt: state.after.value, id: state.after.id }
        }
        const limit = request.limit ?? defaultPageSize
        const page = yield* Effect.orDie(
          repo.list({
            access: accessFilter(actor, resource, "list"),
            webhookAccess: accessFilter(actor, Kinds.webhooks.permission, webhookVerb),
            actorId: actor.id,
            includeViewed,
            after,
            limit
          })
        )
        const items = page.rows.map((row) => present(actor, row))
        const last = page.rows[page.rows.length - 1]
        if (!page.more || last === undefined) return { items }
        const cursor = encodeCursor({
          filters: { include_viewed: String(includeViewed) },
          order,
          after: { value: DateTime.formatIso(last.createdAt), id: last.id }
        })
        return { items, cursor }
      })

      const markViewed = Effect.fn("Notifications.markViewed")(function* (actor: AuthenticatedActor, id: string) {
        const found = yield* Effect.orDie(repo.find(id))
        // spec 5, SECURITY: what the caller cannot see answers 404, what it can see but not change 403.
        if (Option.isNone(found) || !may(actor, "list", found.value.namespace, id)) return yield* notFound(id)
        const webhookId = found.value.webhookId
        if (webhookId !== null && !ops.allowed(actor, Kinds.webhooks, webhookVerb, found.value.namespace, webhookId)) {
          return yield* notFound(id)
        }
        if (!may(actor, "update", found.value.namespace, id)) {
          return yield* new Forbidden({ error: `permission ${resource}:update is required`, code: "forbidden" })
        }
        yield* Effect.orDie(repo.markViewed(actor.id, [id], [], yield* nowDate))
      })

      const markViewedBulk = Effect.fn("Notifications.markViewedBulk")(function* (
        actor: AuthenticatedActor,
        ids: ReadonlyArray<string>
      ) {
        const access = [accessFilter(actor, resource, "list"), accessFilter(actor, resource, "update")]
        const webhookAccess = accessFilter(actor, Kinds.webhooks.permission, webhookVerb)
        yield* Effect.orDie(repo.markViewed(actor.id, ids, access, yield* nowDate, webhookAccess))
      })

      const raise = Effect.fn("Notifications.raise")(function* (
        connection: { readonly id: string },
        notice: NotificationInput
      ) {
        const now = yield* nowDate
        return yield* Effect.orDie(
          repo.upsert(
            {
              id: makeId("ntf"),
              connectionId: connection.id,
              key: notice.key,
              level: notice.level,
              title: notice.title,
              message: notice.message,
              actionUrl: storedActionUrl(notice.action_url),
              metadata: notice.metadata ?? {},
              now
            },
            severityRule(notice.key)
          )
        )
      })

      const clear = Effect.fn("Notifications.clear")(function* (connectionId: string, key: string) {
        return yield* Effect.orDie(repo.resolve(connectionId, key, yield* nowDate))
      })

      const migrationReauthPending = (connectionId: string) =>
        Effect.orDie(repo.raisedByMigration(connectionId, reauthKey))

      return Notifications.of({ list, markViewed, markViewedBulk, raise, clear, migrationReauthPending })
    })
  )
}
