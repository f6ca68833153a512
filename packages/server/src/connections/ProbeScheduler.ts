/**
 * The background probe scheduler (spec 4.2): periodic probes of configured connections run on
 * the worker; a probe failing `failure_threshold` times in a row marks its connection
 * `unhealthy`, `recovery_threshold` successes in a row clear it, and the connection is healthy
 * again once none of its probes is failing.
 */
import { ProbeStateRepo } from "@svc/sql/ProbeStateRepo"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { SvcConfig } from "../config/SvcConfig.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"
import { periodicRun, Probes } from "./Probes.ts"

/** Schedules are re-synchronised with connections and definitions at most this often. */
const syncEveryMs = 5_000
/** A claimed probe that never records (a crashed worker) runs again after this lease. */
const leaseMs = 5 * 60_000

/** One scheduler pass: run the probes that are due and record their outcomes. */
export class ProbeScheduler extends Context.Service<ProbeScheduler, { readonly tick: Effect.Effect<void> }>()(
  "@svc/server/connections/ProbeScheduler"
) {
  static readonly layerNoDeps: Layer.Layer<
    ProbeScheduler,
    never,
    ProbeStateRepo | Probes | ConnectorDefinitions | ResourceOps | SvcConfig
  > = Layer.effect(
    ProbeScheduler,
    Effect.gen(function* () {
      const repo = yield* ProbeStateRepo
      const probes = yield* Probes
      const definitions = yield* ConnectorDefinitions
      const ops = yield* ResourceOps
      const config = yield* SvcConfig
      const concurrency = config.probes.maxConcurrency
      let lastSync = Number.NEGATIVE_INFINITY

      const runOne = (due: { readonly connectionId: string; readonly probeId: string }) =>
        Effect.gen(function* () {
          const found = yield* ops.find(Kinds.connections, due.connectionId)
          if (Option.isNone(found)) return
          const row = found.value
          const definition = yield* definitions.get(row.connectorId, row.connectorVersion)
          const probe = definition.probes?.find((candidate) => candidate.id === due.probeId)
          if (probe === undefined || probe.period === undefined || !probe.enabled) return
          const { result, limited } = yield* probes.run(row, definition, probe)
          // Held back by svc's own limiter: no verdict on health; the claim's lease lapses and it runs again.
          if (limited) {
            yield* Effect.logDebug(`probe ${probe.id} of connection ${row.id} held back: ${result.error}`)
            return
          }
          const change = yield* Effect.orDie(repo.record(periodicRun(row.id, probe, result)))
          if (change !== undefined) {
            yield* Effect.logInfo(`connection ${change.connectionId} is now ${change.healthState} (probe ${probe.id})`)
          }
        }).pipe(
          Effect.catchCause((cause) =>
            Effect.logWarning(`probe ${due.probeId} of connection ${due.connectionId} could not run`, cause)
          )
        )

      const tick = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        if (now - lastSync >= syncEveryMs) {
          yield* Effect.orDie(repo.sync(new Date(now)))
          lastSync = now
        }
        const due = yield* Effect.orDie(repo.claimDue(new Date(now), new Date(now + leaseMs), concurrency * 4))
        yield* Effect.forEach(due, runOne, { concurrency, discard: true })
      }).pipe(Effect.withSpan("ProbeScheduler.tick"))

      return ProbeScheduler.of({ tick })
    })
  )
}
