/** Readiness of the stores a service depends on (`GET /healthz`). */
import { Context, Duration, Effect, Layer } from "effect"
import type { Health as HealthBody } from "@svc/domain/http/SystemApi"

type StoreCheck = HealthBody["checks"][string]

/** One named readiness probe; it must answer within its own timeout. */
export interface Probe {
  readonly name: string
  readonly check: Effect.Effect<void, unknown>
}

const run = (probes: ReadonlyArray<Probe>, timeout: Duration.Input) =>
  Effect.forEach(
    probes,
    (probe) =>
      probe.check.pipe(
        Effect.timeout(timeout),
        Effect.as<StoreCheck>({ status: "ok" }),
        Effect.catchCause(() => Effect.succeed<StoreCheck>({ status: "unavailable", error: "not reachable" })),
        Effect.map((result) => [probe.name, result] as const)
      ),
    { concurrency: "unbounded" }
  ).pipe(
    Effect.map((entries) => ({ ok: entries.every(([, r]) => r.status === "ok"), checks: Object.fromEntries(entries) }))
  )

/** The readiness probes of this process, run concurrently with a per-probe timeout. */
export class Health extends Context.Service<
  Health,
  { readonly check: Effect.Effect<{ readonly ok: boolean; readonly checks: Record<string, StoreCheck> }> }
>()("svc/server/Health") {
  /** A Health service over the probes the effect yields (built once). */
  static readonly layer = <E, R>(
    probes: Effect.Effect<ReadonlyArray<Probe>, E, R>,
    timeout: Duration.Input = Duration.seconds(2)
  ): Layer.Layer<Health, E, R> =>
    Layer.effect(
      Health,
      Effect.map(probes, (p) => Health.of({ check: run(p, timeout) }))
    )
}
