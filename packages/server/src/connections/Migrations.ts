/**
 * `POST /api/v1/connections/{id}/_migrate_version` (spec 4.3; API-CONVENTIONS "Errors", "Tasks
 * and notifications"): checks the request (400 `invalid_timeout`, `migration_noop`,
 * `migration_wrong_connector`, `migration_target_not_migratable`), takes the connection's
 * migration lock from its `Connection` entity (409 `migration_in_progress` while another
 * migration holds it; 503 `cluster_unavailable` when no worker answers within 15 s), records a task, starts the durable workflow without waiting and answers
 * 202 with the snake_case task handle. The lock is held by the task until its workflow ends, and
 * lapses on its own a grace period after the deadline.
 */
import { ConnectionEntity } from "@svc/cluster/ConnectionEntity"
import { MigrateVersionWorkflow } from "@svc/cluster/MigrationWorkflow"
import { BadRequest, Conflict, ServiceUnavailable } from "@svc/domain/Errors"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { type ConnectorId, makeId } from "@svc/domain/Ids"
import {
  defaultMigrationTimeoutSeconds,
  type MigrateVersion,
  MigrationRejection,
  type MigrationTaskHandle,
  maxMigrationTimeoutSeconds,
  migrationLockGraceMs,
  validMigrationTimeout
} from "@svc/domain/Migration"
import { ConnectorRepo } from "@svc/sql/ConnectorRepo"
import { TaskRepo } from "@svc/sql/TaskRepo"
import { Clock, Context, Duration, Effect, Layer, Option } from "effect"
import type { Sharding } from "effect/cluster"
import type { WorkflowEngine } from "effect/workflow"
import * as Kinds from "../resources/ResourceKinds.ts"
import { type ResourceError, ResourceOps } from "../resources/ResourceOps.ts"

/** How long the lock outlives the deadline: the workflow frees it first unless its worker is lost. */
export const lockGraceMs = migrationLockGraceMs

/** How long the start waits for the entity's answer before it gives up (the cluster is unreachable). */
const lockAnswerTimeout = Duration.seconds(15)

const reject = (code: string, error: string) => new BadRequest({ error, code })

const inProgress = (connectionId: string) =>
  new Conflict({
    error: `a migration of connection ${connectionId} is running; poll its task and retry once it ended`,
    code: MigrationRejection.inProgress
  })

export class Migrations extends Context.Service<
  Migrations,
  {
    readonly migrate: (
      actor: AuthenticatedActor,
      connectionId: string,
      body: MigrateVersion
    ) => Effect.Effect<MigrationTaskHandle, ResourceError | ServiceUnavailable>
  }
>()("@svc/server/Migrations") {
  static readonly layerNoDeps: Layer.Layer<
    Migrations,
    never,
    ResourceOps | ConnectorRepo | TaskRepo | WorkflowEngine.WorkflowEngine | Sharding.Sharding
  > = Layer.effect(
    Migrations,
    Effect.gen(function* () {
      const ops = yield* ResourceOps
      const versions = yield* ConnectorRepo
      const tasks = yield* TaskRepo
      const entity = yield* ConnectionEntity.client
      const context = yield* Effect.context<WorkflowEngine.WorkflowEngine>()

      const release = (connectionId: string, owner: string) =>
        entity(connectionId)
          .releaseMigrationLock({ owner })
          .pipe(
            Effect.timeout(lockAnswerTimeout),
            Effect.catchCause((cause) =>
              Effect.logWarning(`could not release the migration lock of connection ${connectionId}`, cause)
            )
          )

      const migrate = Effect.fn("Migrations.migrate")(function* (
        actor: AuthenticatedActor,
        connectionId: string,
        body: MigrateVersion
      ) {
        const timeoutSeconds = body.timeout_seconds ?? defaultMigrationTimeoutSeconds
        if (!validMigrationTimeout(timeoutSeconds)) {
          return yield* reject(
            MigrationRejection.invalidTimeout,
            `timeout_seconds must be an integer from 1 to ${maxMigrationTimeoutSeconds}`
          )
        }
        const row = yield* ops.load(actor, Kinds.connections, connectionId, "migrate")
        const target = body.target_version
        if (body.connector_id !== undefined && body.connector_id !== row.connectorId) {
          return yield* reject(
            MigrationRejection.wrongConnector,
            `connection ${row.id} belongs to connector ${row.connectorId}, not ${body.connector_id}`
          )
        }
        if (target === row.connectorVersion) {
          // A run that already switched the version still holds the connection until it ends:
          // a second start then is the concurrent migration (409), not a no-op.
          if (yield* Effect.orDie(tasks.hasActive("migrate_version", row.id))) return yield* inProgress(row.id)
          return yield* reject(MigrationRejection.noop, `connection ${row.id} is already on version ${target}`)
        }
        const found = yield* Effect.orDie(versions.version(row.connectorId as ConnectorId, target))
        if (Option.isNone(found)) {
          return yield* reject(
            MigrationRejection.wrongConnector,
            `version ${target} is not a version of connector ${row.connectorId}`
          )
        }
        if (found.value.state === "draft" || found.value.state === "archived") {
          return yield* reject(
            MigrationRejection.notMigratable,
            `version ${target} is ${found.value.state}: only primary and active versions are migration targets`
          )
        }
        if (row.state === "disconnecting" || row.state === "disconnected") {
          return yield* new Conflict({
            error: `connection ${row.id} is ${row.state}`,
            code: "connection_disconnecting"
          })
        }
        const now = yield* Clock.currentTimeMillis
        const deadline = now + timeoutSeconds * 1000
        const taskId = makeId("tsk")
        const held = yield* entity(row.id)
          .acquireMigrationLock({ owner: taskId, ttlMs: timeoutSeconds * 1000 + lockGraceMs })
          .pipe(
            Effect.timeout(lockAnswerTimeout),
            Effect.catchCause((cause) =>
              Effect.andThen(
                Effect.logError(`the migration lock of connection ${row.id} could not be taken`, cause),
                Effect.fail(
                  new ServiceUnavailable({
                    error: "the cluster did not answer; retry later",
                    code: "cluster_unavailable"
                  })
                )
              )
            )
          )
        if (held._tag === "HeldBy") return yield* inProgress(row.id)
        const payload = {
          taskId,
          connectionId: row.id,
          sourceVersion: row.connectorVersion,
          targetVersion: target,
          deadline
        }
        // The task row, with its one item (the transaction marks it done: what a resumed run checks
        // to apply only once); a failure here frees the lock at once instead of at its expiry.
        yield* Effect.gen(function* () {
          const created = yield* tasks.create({
            id: taskId,
            type: "migrate_version",
            actorId: actor.id,
            subjectId: row.id,
            lockKey: null,
            executionId: yield* MigrateVersionWorkflow.executionId(payload),
            now: new Date(now)
          })
          if (created === "Locked") return yield* Effect.die(new Error("a task without a lock key was refused"))
          yield* tasks.setTotal(taskId, 1, new Date(now))
        }).pipe(
          Effect.orDie,
          Effect.onError(() => release(row.id, taskId))
        )
        yield* MigrateVersionWorkflow.execute(payload, { discard: true }).pipe(
          Effect.provide(context),
          Effect.asVoid,
          Effect.catchCause((cause) =>
            Effect.gen(function* () {
              yield* Effect.logError(`could not start the migration of connection ${row.id}`, cause)
              const at = new Date(yield* Clock.currentTimeMillis)
              yield* Effect.orDie(tasks.finish(taskId, "failed", "the workflow could not be started", at))
              yield* release(row.id, taskId)
            })
          )
        )
        return {
          task_id: taskId,
          connection_id: row.id,
          source_version: row.connectorVersion,
          target_version: target
        } satisfies MigrationTaskHandle
      })

      return Migrations.of({ migrate })
    })
  )
}
