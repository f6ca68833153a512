/** Handlers of the unauthenticated `/ping` and `/healthz` endpoints of every service. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApiV1, ApiV1, PublicApi, WorkerApi } from "@svc/domain/http/Apis"
import type { Health as HealthBody, RunnerState } from "@svc/domain/http/SystemApi"
import { CurrentService } from "./CurrentService.ts"
import { Health } from "../stores/Health.ts"
import { version } from "../config/Version.ts"
import { RunnerStatus } from "../worker/Membership.ts"

const handlers = Effect.gen(function* () {
  const health = yield* Health
  const service = yield* CurrentService
  const runnerStatus = yield* RunnerStatus
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
  return {
    ping: () => Effect.succeed("pong"),
    healthz: () =>
      Effect.flatMap(health.check, ({ ok, checks }) =>
        Effect.flatMap(withRunner(ok, checks), (state) => {
          const body: HealthBody = {
            status: state.ok ? "ok" : "unavailable",
            service,
            version,
            checks: state.checks,
            ...(state.runner === undefined ? {} : { runner: state.runner })
          }
          return state.ok ? Effect.succeed(body) : Effect.fail(body)
        })
      )
  }
})

export const ApiSystemHttp = HttpApiBuilder.group(ApiV1, "system", (h) =>
  Effect.map(handlers, (s) => h.handle("ping", s.ping).handle("healthz", s.healthz))
)
export const AdminApiSystemHttp = HttpApiBuilder.group(AdminApiV1, "system", (h) =>
  Effect.map(handlers, (s) => h.handle("ping", s.ping).handle("healthz", s.healthz))
)
export const PublicSystemHttp = HttpApiBuilder.group(PublicApi, "system", (h) =>
  Effect.map(handlers, (s) => h.handle("ping", s.ping).handle("healthz", s.healthz))
)
export const WorkerSystemHttp = HttpApiBuilder.group(WorkerApi, "system", (h) =>
  Effect.map(handlers, (s) => h.handle("ping", s.ping).handle("healthz", s.healthz))
)
