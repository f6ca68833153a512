/**
 * Background probe state (spec 4.2): one row per (connection, periodic probe) with consecutive
 * outcome counters; a probe past its failure threshold is `failing`, and a connection is
 * unhealthy while any of its probes is failing or its re-authentication notice is active.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"

/** A probe due to run. */
export const DueProbe = Schema.Struct({
  connectionId: Schema.String,
  probeId: Schema.String,
  consecutiveFailures: Schema.Number,
  consecutiveSuccesses: Schema.Number,
  failing: Schema.Boolean
})
export type DueProbe = typeof DueProbe.Type

/** One recorded run. */
export interface ProbeRun {
  readonly connectionId: string
  readonly probeId: string
  readonly outcome: "success" | "failure"
  readonly statusCode: number | undefined
  readonly error: string | undefined
  readonly checkedAt: Date
  readonly nextRunAt: Date
  readonly failureThreshold: number
  readonly recoveryThreshold: number
}

/** The health a connection has after a run, when it changed. */
export interface HealthChange {
  readonly connectionId: string
  readonly healthState: "healthy" | "unhealthy"
}

const decodeDue = Schema.decodeUnknownEffect(Schema.Array(DueProbe))

/** Storage of probe schedules and outcomes. */
export class ProbeStateRepo extends Context.Service<
  ProbeStateRepo,
  {
    /**
     * Adds a schedule for every enabled periodic probe of every live configured connection's version and
     * drops schedules whose probe or connection no longer qualifies; returns rows added.
     */
    readonly sync: (now: Date) => Effect.Effect<number, SqlError>
    /** Claims up to `limit` due probes, pushing their next run out by `lease` so no tick re-runs them. */
    readonly claimDue: (now: Date, leaseUntil: Date, limit: number) => Effect.Effect<ReadonlyArray<DueProbe>, SqlError>
    /** Records a run and recomputes the connection's health; returns the change, if any. */
    readonly record: (run: ProbeRun) => Effect.Effect<HealthChange | undefined, SqlError>
  }
>()("@svc/sql/ProbeStateRepo") {
  static readonly layer: Layer.Layer<ProbeStateRepo, never, SqlClient.SqlClient> = Layer.effect(
    ProbeStateRepo,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // spec 4.3 rule 4: while the re-authentication notice is active, no probe success makes the connection healthy.
      const reauthPending = sql`EXISTS (
        SELECT 1 FROM notifications n WHERE n.connection_id = c.id AND n.key = 'svc.reauth' AND n.resolved_at IS NULL
      )`

      const sync = Effect.fn("ProbeStateRepo.sync")(function* (now: Date) {
        const periodic = sql`
          SELECT c.id AS connection_id, p->>'id' AS probe_id
          FROM connections c
          JOIN connector_versions v ON v.connector_id = c.connector_id AND v.version = c.connector_version
          CROSS JOIN LATERAL jsonb_array_elements(COALESCE(v.definition->'probes', '[]'::jsonb)) p
          WHERE c.deleted_at IS NULL AND c.state = 'configured' AND p ? 'period'
            AND COALESCE(p->'enabled', 'true'::jsonb) <> 'false'::jsonb`
        const dropped = yield* sql<{ connectionId: string }>`
          DELETE FROM probe_states s
          WHERE NOT EXISTS (
            SELECT 1 FROM (${periodic}) q WHERE q.connection_id = s.connection_id AND q.probe_id = s.probe_id
          )
          RETURNING s.connection_id`
        // A dropped failing probe must not leave its connection unhealthy with nothing left to clear it.
        const affected = [...new Set(dropped.map((row) => row.connectionId))]
        if (affected.length > 0) {
          yield* sql`
            UPDATE connections c SET health_state = 'healthy', updated_at = GREATEST(c.updated_at, ${now})
            WHERE c.id IN ${sql.in(affected)} AND c.deleted_at IS NULL AND c.health_state = 'unhealthy'
              AND NOT EXISTS (SELECT 1 FROM probe_states s WHERE s.connection_id = c.id AND s.failing)
              AND NOT ${reauthPending}`
        }
        const added = yield* sql<{ connectionId: string }>`
          INSERT INTO probe_states (connection_id, probe_id, next_run_at)
          SELECT connection_id, probe_id, ${now} FROM (${periodic}) q
          ON CONFLICT (connection_id, probe_id) DO NOTHING
          RETURNING connection_id`
        return added.length
      })

      const claimDue = Effect.fn("ProbeStateRepo.claimDue")(function* (now: Date, leaseUntil: Date, limit: number) {
        const rows = yield* sql`
          UPDATE probe_states s SET next_run_at = ${leaseUntil}
          FROM (
            SELECT connection_id, probe_id FROM probe_states
            WHERE next_run_at <= ${now}
            ORDER BY next_run_at
            LIMIT ${limit}
            FOR UPDATE SKIP LOCKED
          ) due
          WHERE s.connection_id = due.connection_id AND s.probe_id = due.probe_id
          RETURNING s.connection_id, s.probe_id, s.consecutive_failures, s.consecutive_successes, s.failing`
        return yield* Effect.orDie(decodeDue(rows))
      })

      const record = (run: ProbeRun) =>
        sql
          .withTransaction(
            Effect.gen(function* () {
              const success = run.outcome === "success"
              // Runs of one connection's probes serialise here, so each sees the others' committed state.
              yield* sql`SELECT 1 FROM connections WHERE id = ${run.connectionId} FOR UPDATE`
              const updated = yield* sql<{ failing: boolean }>`
              UPDATE probe_states SET
                consecutive_failures = CASE WHEN ${success} THEN 0 ELSE consecutive_failures + 1 END,
                consecutive_successes = CASE WHEN ${success} THEN consecutive_successes + 1 ELSE 0 END,
                failing = CASE
                  WHEN ${success} AND consecutive_successes + 1 >= ${run.recoveryThreshold} THEN false
                  WHEN NOT ${success} AND consecutive_failures + 1 >= ${run.failureThreshold} THEN true
                  ELSE failing END,
                last_outcome = ${run.outcome},
                last_status_code = ${run.statusCode ?? null},
                last_error = ${run.error ?? null},
                last_checked_at = ${run.checkedAt},
                next_run_at = ${run.nextRunAt}
              WHERE connection_id = ${run.connectionId} AND probe_id = ${run.probeId}
              RETURNING failing`
              // The schedule was dropped meanwhile (connection deleted, version changed): nothing to do.
              if (updated.length === 0) return undefined
              // The reason a webhook's connection.health_changed reports (migration 0009), for this transaction.
              yield* sql`SELECT set_config('svc.webhook_reason', ${success ? "probe_recovered" : "probe_failed"}, true)`
              const changed = yield* sql<{ healthState: "healthy" | "unhealthy" }>`
              UPDATE connections c SET
                health_state = CASE WHEN EXISTS (
                  SELECT 1 FROM probe_states s WHERE s.connection_id = c.id AND s.failing
                ) OR ${reauthPending} THEN 'unhealthy' ELSE 'healthy' END,
                updated_at = GREATEST(c.updated_at, ${run.checkedAt})
              WHERE c.id = ${run.connectionId} AND c.deleted_at IS NULL
                AND c.health_state IS DISTINCT FROM (CASE WHEN EXISTS (
                  SELECT 1 FROM probe_states s WHERE s.connection_id = c.id AND s.failing
                ) OR ${reauthPending} THEN 'unhealthy' ELSE 'healthy' END)
              RETURNING c.health_state`
              const row = changed[0]
              return row === undefined ? undefined : { connectionId: run.connectionId, healthState: row.healthState }
            })
          )
          .pipe(Effect.withSpan("ProbeStateRepo.record"))

      return ProbeStateRepo.of({ sync, claimDue, record })
    })
  )
}
