/**
 * The notifications one version migration writes inside its transaction (spec 2.10, 2.11, 4.3
 * rule 5): the connector-authored notices its hooks set or unset, keyed per connection, then the
 * built-in ones — re-authentication (which outranks setup and is reused under its key) and setup
 * (raised, or resolved when nothing is missing any more). Built-in notices name the migration in
 * their metadata, so a token refresh knows not to resolve them.
 */
import type { HookNotification } from "@svc/domain/HookResult"
import { makeId } from "@svc/domain/Ids"
import {
  type NotificationInput,
  reauthNotice,
  type SeverityRule,
  setupKey,
  setupNotice,
  severityRule,
  storedActionUrl
} from "@svc/domain/Notification"
import { NotificationRepo } from "@svc/sql/NotificationRepo"
import { Effect } from "effect"
import type { MigrationDecision } from "./MigrationPlan.ts"

/** Writes the migration's notices for `connectionId` at `at`; runs inside the caller's transaction. */
export const writeMigrationNotices = (input: {
  readonly connectionId: string
  readonly connectorNotices: ReadonlyMap<string, HookNotification | "unset">
  readonly decision: MigrationDecision
  readonly migration: { readonly from: number; readonly to: number }
  readonly at: Date
}) =>
  Effect.gen(function* () {
    const repo = yield* NotificationRepo
    const { connectionId, decision, migration, at } = input
    const raise = (notice: NotificationInput, rule?: SeverityRule) =>
      Effect.orDie(
        repo.upsert(
          {
            id: makeId("ntf"),
            connectionId,
            key: notice.key,
            level: notice.level,
            title: notice.title,
            message: notice.message,
            actionUrl: storedActionUrl(notice.action_url),
            metadata: notice.metadata ?? {},
            now: at
          },
          rule
        )
      )
    // Connector-authored notices, keyed per connection (spec 2.10).
    for (const [key, entry] of input.connectorNotices) {
      if (entry === "unset") yield* Effect.orDie(repo.resolve(connectionId, key, at))
      else yield* raise({ ...entry, message: entry.message ?? "" })
    }
    // The built-in notices (spec 2.11): re-authentication outranks setup; an active one is reused.
    if (decision.reauth) {
      const notice = reauthNotice(connectionId)
      yield* raise(
        { ...notice, metadata: { reason: decision.reauthReasons.join(","), migration } },
        severityRule(notice.key)
      )
    }
    if (decision.setupNotice) {
      const notice = setupNotice(connectionId)
      yield* raise(
        { ...notice, metadata: { setup_step_id: decision.setupStepId, migration } },
        severityRule(notice.key)
      )
    } else if (decision.setupStepId === null) {
      yield* Effect.orDie(repo.resolve(connectionId, setupKey, at))
    }
  })
