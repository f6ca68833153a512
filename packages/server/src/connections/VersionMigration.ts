/**
 * The worker's part of a version migration (spec 2.10, 3.1, 4.3): the hooks of every version
 * crossed run in order in the hook sandbox over the decrypted configuration, user labels and
 * annotations; the results are applied in sequence; source and target are compared (rule 4); then
 * version, encrypted configuration, labels, annotations, setup state, health state, notifications
 * and the task's progress are written in ONE transaction (rule 5). A hook that fails, a deadline
 * that passes or a result the target refuses persists nothing.
 *
 * Exactly once: the transaction marks the task's one item done; a run resumed after a crash that
 * finds it done skips the hooks and the write. A change to the connection while the hooks ran
 * (another writer) is detected under the row lock and the hooks run again on the fresh row (they
 * are deterministic). After the switch: the refresh attempt a changed OAuth client asks for, then
 * the target's enabled probes once (their outcome feeds health like the monitor's; a success never
 * clears "re-authentication required").
 */
import { ConnectionEntity } from "@svc/cluster/ConnectionEntity"
import type { MigrationOutcome } from "@svc/cluster/MigrationWorkflow"
import type { ConnectorDefinition } from "@svc/domain/ConnectorDefinition"
import type { ConnectionId, ConnectorId } from "@svc/domain/Ids"
import { isSystemKey, sortKeys, systemLabelsOf, userLabelsOf } from "@svc/domain/Labels"
import { migrationPath } from "@svc/domain/Migration"
import { MigrationRepo } from "@svc/sql/MigrationRepo"
import { NotificationRepo } from "@svc/sql/NotificationRepo"
import { ProbeStateRepo } from "@svc/sql/ProbeStateRepo"
import type { ConnectionRow } from "@svc/sql/Rows"
import { TaskRepo } from "@svc/sql/TaskRepo"
import { Clock, Context, Duration, Effect, Layer, Option } from "effect"
import type { Sharding } from "effect/cluster"
import { SqlClient } from "effect/sql"
import { type HookFailed, HookSandbox } from "../hooks/HookSandbox.ts"
import { ConnectionChanges } from "../resources/ConnectionChanges.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"
import { ConnectionSecrets } from "./ConnectionSecrets.ts"
import { writeMigrationNotices } from "./MigrationNotices.ts"
import { applyHookResult, decide, type HookState, initialHookState, refreshInputsChanged } from "./MigrationPlan.ts"
import { periodicRun, Probes } from "./Probes.ts"
import { TokenRefresher } from "./TokenRefresher.ts"

/** One migration run (the workflow's payload). */
export interface MigrationRun {
  readonly taskId: string
  readonly connectionId: string
  readonly sourceVersion: number
  readonly targetVersion: number
  readonly deadline: number
}

/** What the transaction decided, for the steps after it. */
export interface Applied extends MigrationOutcome {
  /** Attempt a token refresh after the switch. */
  readonly refresh: boolean
}

/** How often the hooks run again when the connection changed under them before the write gives up. */
const maxAttempts = 3

const userAnnotationsOf = (annotations: Readonly<Record<string, string>>) =>
  Object.fromEntries(Object.entries(annotations).filter(([key]) => !isSystemKey(key)))
const systemAnnotationsOf = (annotations: Readonly<Record<string, string>>) =>
  Object.fromEntries(Object.entries(annotations).filter(([key]) => isSystemKey(key)))

/** What a concurrent writer may have changed while the hooks ran. */
const fingerprint = (row: ConnectionRow) =>
  JSON.stringify([
    row.connectorVersion,
    row.state,
    row.setupStepId,
    row.configurationEnc,
    row.legacyConfiguration,
    sortKeys(row.labels),
    sortKeys(row.annotations)
  ])

/** A failure that ends the task: a message for its `error` (never a configuration value). */
class MigrationFailed {
  readonly _tag = "MigrationFailed"
  readonly message: string
  constructor(message: string) {
    this.message = message
  }
}

export class VersionMigration extends Context.Service<
  VersionMigration,
  {
    /** Hooks and the one transaction; fails with the task's error message (nothing persisted). */
    readonly apply: (run: MigrationRun) => Effect.Effect<Applied, string>
    /** After the switch: the refresh attempt when asked for, the target's enabled probes once. Never fails. */
    readonly after: (run: MigrationRun, applied: Applied) => Effect.Effect<void>
    /** Ends the task (its state and error) and frees the connection's migration lock. */
    readonly finish: (run: MigrationRun, failure: string | undefined) => Effect.Effect<void>
  }
>()("@svc/server/VersionMigration") {
  static readonly layerNoDeps: Layer.Layer<
    VersionMigration,
    never,
    | HookSandbox
    | ResourceOps
    | ConnectorDefinitions
    | ConnectionSecrets
    | NotificationRepo
    | TaskRepo
    | ProbeStateRepo
    | Probes
    | TokenRefresher
    | ConnectionChanges
    | SqlClient.SqlClient
    | Sharding.Sharding
  > = Layer.effect(
    VersionMigration,
    Effect.gen(function* () {
      const sandbox = yield* HookSandbox
      const ops = yield* ResourceOps
      const definitions = yield* ConnectorDefinitions
      const secrets = yield* ConnectionSecrets
      const notifications = yield* NotificationRepo
      const tasks = yield* TaskRepo
      const probeStates = yield* ProbeStateRepo
      const probes = yield* Probes
      const refresher = yield* TokenRefresher
      const changes = yield* ConnectionChanges
      const sql = yield* SqlClient.SqlClient
      const repo = yield* MigrationRepo
      const entity = yield* ConnectionEntity.client
      const nowDate = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

      const definitionOf = (connectorId: string, version: number) =>
        definitions.get(connectorId as ConnectorId, version)

      /** The hooks from the row's version to the target, in order, over the row's current values. */
      const runHooks = (run: MigrationRun, row: ConnectionRow) =>
        Effect.gen(function* () {
          const cfg = yield* secrets.configuration(row)
          let state: HookState = initialHookState(cfg, userLabelsOf(row.labels), userAnnotationsOf(row.annotations))
          let hooks = 0
          for (const step of migrationPath(run.sourceVersion, run.targetVersion)) {
            const definition = yield* definitionOf(row.connectorId, step.version)
            const hook = definition.migrations?.[step.direction]?.javascript
            if (hook === undefined) continue
            const left = run.deadline - (yield* Clock.currentTimeMillis)
            if (left <= 0) return yield* Effect.fail(new MigrationFailed("the migration timeout expired"))
            yield* Effect.logInfo(
              `migration task ${run.taskId}: running hook v${step.version}.${step.direction} of connection ${row.id}`
            )
            const result = yield* sandbox
              .run({
                javascript: definition.javascript,
                hook,
                cfg: state.cfg,
                labels: state.labels,
                annotations: state.annotations,
                seed: `${run.taskId}:v${step.version}.${step.direction}`,
                timeout: Duration.millis(left)
              })
              .pipe(
                Effect.mapError(
                  (failure: HookFailed) =>
                    new MigrationFailed(
                      `hook v${step.version}.${step.direction} failed (${failure.reason}): ${failure.message}`
                    )
                )
              )
            state = applyHookResult(state, result)
            hooks++
          }
          return { state, hooks }
        })

      /** The one transaction (rule 5); `undefined` when the row changed since `seen` (run the hooks again). */
      const write = (
        run: MigrationRun,
        seen: ConnectionRow,
        source: ConnectorDefinition,
        target: ConnectorDefinition,
        state: HookState,
        hooks: number
      ) =>
        sql.withTransaction(
          Effect.gen(function* () {
            const locked = yield* Effect.orDie(repo.lock(run.connectionId))
            if (Option.isNone(locked)) return yield* Effect.fail(new MigrationFailed("the connection no longer exists"))
            const row = locked.value
            const task = yield* Effect.orDie(tasks.find(run.taskId))
            if (Option.isSome(task) && task.value.progressDone > 0) return { _tag: "AlreadyApplied" as const, row }
            if (fingerprint(row) !== fingerprint(seen)) return undefined
            const now = yield* Clock.currentTimeMillis
            if (now >= run.deadline) return yield* Effect.fail(new MigrationFailed("the migration timeout expired"))
            const compared = decide(source, target, row, state)
            if (compared._tag === "Invalid") {
              const shown = compared.details.slice(0, 5).map((d) => `${d.field}: ${d.message}`)
              const more = compared.details.length > 5 ? `; and ${compared.details.length - 5} more` : ""
              return yield* Effect.fail(
                new MigrationFailed(
                  `the migrated connection does not fit version ${run.targetVersion}: ${shown.join("; ")}${more}`
                )
              )
            }
            const decision = compared.decision
            const at = new Date(now)
            const configurationEnc = yield* secrets.sealConfiguration(row, decision.configuration)
            yield* Effect.orDie(
              repo.write(
                row.id,
                {
                  connectorVersion: run.targetVersion,
                  configurationEnc,
                  labels: sortKeys({ ...systemLabelsOf(row.labels), ...decision.labels }),
                  annotations: sortKeys({ ...systemAnnotationsOf(row.annotations), ...decision.annotations }),
                  setupStepId: decision.setupStepId,
                  healthState: decision.reauth ? "unhealthy" : row.healthState
                },
                at
              )
            )
            yield* writeMigrationNotices({
              connectionId: row.id,
              connectorNotices: state.notifications,
              decision,
              migration: { from: run.sourceVersion, to: run.targetVersion },
              at
            }).pipe(Effect.provideService(NotificationRepo, notifications))
            yield* Effect.orDie(tasks.stepDone(run.taskId, at))
            return {
              _tag: "Written" as const,
              applied: {
                hooks,
                reauth: decision.reauth,
                setupStepId: decision.setupStepId,
                refresh: decision.refresh
              } satisfies Applied
            }
          })
        )

      const apply = Effect.fn("VersionMigration.apply")(
        function* (run: MigrationRun) {
          const first = yield* loadRow(run)
          const source = yield* definitionOf(first.connectorId, run.sourceVersion)
          const target = yield* definitionOf(first.connectorId, run.targetVersion)
          for (let attempt = 1; attempt <= maxAttempts; attempt++) {
            const row = attempt === 1 ? first : yield* loadRow(run)
            // Already switched by this task before a crash (its transaction marked the task)?
            const task = yield* Effect.orDie(tasks.find(run.taskId))
            if (Option.isSome(task) && task.value.progressDone > 0) return alreadyApplied(run, row, source, target)
            if (row.connectorVersion !== run.sourceVersion) {
              return yield* Effect.fail(
                new MigrationFailed(`the connection is on version ${row.connectorVersion}, not ${run.sourceVersion}`)
              )
            }
            const { state, hooks } = yield* runHooks(run, row)
            const written = yield* write(run, row, source, target, state, hooks).pipe(
              Effect.catchTag("SqlError", (error) => Effect.die(error))
            )
            if (written === undefined) {
              yield* Effect.logInfo(`migration task ${run.taskId}: connection ${row.id} changed meanwhile; hooks again`)
              continue
            }
            if (written._tag === "AlreadyApplied") return alreadyApplied(run, written.row, source, target)
            yield* changes.written([run.connectionId])
            yield* Effect.logInfo(
              `migration task ${run.taskId}: connection ${run.connectionId} moved from version ${run.sourceVersion} to ${run.targetVersion} (${written.applied.hooks} hook(s))`
            )
            return written.applied
          }
          return yield* Effect.fail(
            new MigrationFailed(`the connection kept changing during the migration (${maxAttempts} attempts); retry`)
          )
        },
        (effect) => Effect.mapError(effect, (failure: MigrationFailed) => failure.message)
      )

      const loadRow = (run: MigrationRun) =>
        Effect.flatMap(ops.find(Kinds.connections, run.connectionId), (found) =>
          Option.isNone(found)
            ? Effect.fail(new MigrationFailed("the connection no longer exists"))
            : Effect.succeed(found.value)
        )

      /** The outcome of a transaction that committed before a crash, read back from the row. */
      const alreadyApplied = (
        run: MigrationRun,
        row: ConnectionRow,
        source: ConnectorDefinition,
        target: ConnectorDefinition
      ): Applied => {
        const reauth = row.healthState === "unhealthy" && row.connectorVersion === run.targetVersion
        return {
          hooks: migrationPath(run.sourceVersion, run.targetVersion).length,
          reauth,
          setupStepId: row.setupStepId,
          refresh: !reauth && refreshInputsChanged(source, target)
        }
      }

      const after = Effect.fn("VersionMigration.after")(
        function* (run: MigrationRun, applied: Applied) {
          if (applied.refresh) {
            const refreshed = yield* refresher.refreshNow(run.connectionId as ConnectionId, { force: true })
            yield* Effect.logInfo(
              `migration task ${run.taskId}: token refresh of connection ${run.connectionId} after the switch: ${refreshed}`
            )
          }
          const found = yield* ops.find(Kinds.connections, run.connectionId)
          if (Option.isNone(found) || found.value.connectorVersion !== run.targetVersion) return
          const row = found.value
          if (row.state !== "configured") return
          const definition = yield* definitionOf(row.connectorId, run.targetVersion)
          for (const probe of definition.probes ?? []) {
            if (!probe.enabled) continue
            const { result, limited } = yield* probes.run(row, definition, probe)
            yield* Effect.logInfo(
              `migration task ${run.taskId}: probe ${probe.id} of connection ${row.id}: ${result.outcome}${limited ? " (held back)" : ""}`
            )
            if (limited || probe.period === undefined) continue
            yield* Effect.orDie(probeStates.record(periodicRun(row.id, probe, result)))
          }
        },
        (effect) =>
          Effect.catchCause(effect, (cause) =>
            Effect.logWarning("migration: the refresh or probes after the switch failed", cause)
          )
      )

      const finish = Effect.fn("VersionMigration.finish")(function* (run: MigrationRun, failure: string | undefined) {
        yield* Effect.orDie(
          tasks.finish(run.taskId, failure === undefined ? "completed" : "failed", failure ?? null, yield* nowDate)
        )
        // The lock lapses by itself at its expiry if the entity cannot be reached now.
        yield* entity(run.connectionId)
          .releaseMigrationLock({ owner: run.taskId })
          .pipe(
            Effect.timeout(Duration.seconds(30)),
            Effect.catchCause((cause) =>
              Effect.logWarning(`migration task ${run.taskId}: could not release the migration lock`, cause)
            )
          )
      })

      return VersionMigration.of({ apply, after, finish })
    })
  ).pipe(Layer.provide(MigrationRepo.layer))
}
