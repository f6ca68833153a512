/** Handlers of the unauthenticated `/ping`, `/healthz`, `/livez` and `/readyz` endpoints of every service. */
import { Effect, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApiV1, ApiV1, PublicApi, WorkerApi } from "@svc/domain/http/Apis"
import { ServiceUnavailable } from "@svc/domain/Errors"
import type { Health as HealthBody, ProbeOk, RunnerState } from "@svc/domain/http/SystemApi"
import { CurrentService } from "./CurrentService.ts"
import { EventLoopLag } from "./EventLoopLag.ts"
import { liveness, readiness, type Verdict } from "./Readiness.ts"
import { ServerDrain } from "./Servers.ts"
import { Health } from "../stores/Health.ts"
import { version } from "../config/Version.ts"
import { RunnerStatus } from "../worker/Membership.ts"
import { TelemetryRuntime } from "../telemetry/TelemetryLayer.ts"

const probeOk: ProbeOk = { status: "ok" }

const answer = (verdict: Verdict, code: string): Effect.Effect<ProbeOk, ServiceUnavailable> =>
  verdict.ready ? Effect.succeed(probeOk) : Effect.fail(new ServiceUnavailable({ error: verdict.reason, code }))

const handlers = Effect.gen(function* () {
  const health = yield* Health
  const service = yield* CurrentService
  const runnerStatus = yield* RunnerStatus
  const drain = yield* ServerDrain
  const lag = yield* EventLoopLag
  const telemetry = Option.getOrUndefined(yield* Effect.serviceOption(TelemetryRuntime))
  // A worker is ready only while its runner is registered and not shutting down.
  const withRunner = (
    ok: boolean,
    checks: HealthBody["checks"]
  ): Effect.Effect<{ ok: boolean; checks: HealthBody["checks"]; runner: RunnerState | undefined }> =>
    service !== "worker"
      ? Effect.succeed({ ok, checks, runner: undefined })
      : Effect.map(runnerStatus.report, (runner) => {
          const up = runner?.registered === true && !runner.shuttingDown
          const check = up
            ? { status: "ok" as const }
            : { status: "unavailable" as const, error: "runner not registered" }
          return { ok: ok && up, checks: { ...checks, runner: check }, runner }
        })
  const state = Effect.flatMap(health.check, ({ ok, checks }) => withRunner(ok, checks))
  return {
    ping: () => Effect.succeed("pong"),
    healthz: () =>
      Effect.flatMap(state, (s) => {
        const exporters = telemetry?.exporters() ?? {}
        const body: HealthBody = {
          status: s.ok ? "ok" : "unavailable",
          service,
          version,
          checks: s.checks,
          ...(s.runner === undefined ? {} : { runner: s.runner }),
          ...(Object.keys(exporters).length === 0 ? {} : { telemetry: exporters })
        }
        return s.ok ? Effect.succeed(body) : Effect.fail(body)
      }),
    livez: () => answer(liveness(lag.currentMs()), "not_live"),
    // Shutting down answers at once: no store is asked.
    readyz: () =>
      drain.shuttingDown()
        ? answer(readiness(service, true, {}), "not_ready")
        : Effect.flatMap(state, (s) => answer(readiness(service, false, s.checks), "not_ready"))
  }
})

export const ApiSystemHttp = HttpApiBuilder.group(ApiV1, "system", (h) =>
  Effect.map(handlers, (s) =>
    h.handle("ping", s.ping).handle("healthz", s.healthz).handle("livez", s.livez).handle("readyz", s.readyz)
  )
)
export const AdminApiSystemHttp = HttpApiBuilder.group(AdminApiV1, "system", (h) =>
  Effect.map(handlers, (s) =>
    h.handle("ping", s.ping).handle("healthz", s.healthz).handle("livez", s.livez).handle("readyz", s.readyz)
  )
)
export const PublicSystemHttp = HttpApiBuilder.group(PublicApi, "system", (h) =>
  Effect.map(handlers, (s) =>
    h.handle("ping", s.ping).handle("healthz", s.healthz).handle("livez", s.livez).handle("readyz", s.readyz)
  )
)
export const WorkerSystemHttp = HttpApiBuilder.group(WorkerApi, "system", (h) =>
  Effect.map(handlers, (s) =>
    h.handle("ping", s.ping).handle("healthz", s.healthz).handle("livez", s.livez).handle("readyz", s.readyz)
  )
)
