/** Handlers of the unauthenticated `/ping` and `/healthz` endpoints of every service. */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { AdminApiV1, ApiV1, PublicApi, WorkerApi } from "@svc/domain/http/Apis"
import type { Health as HealthBody } from "@svc/domain/http/SystemApi"
import { CurrentService } from "./CurrentService.ts"
import { Health } from "../stores/Health.ts"
import { version } from "../config/Version.ts"

const handlers = Effect.gen(function* () {
  const health = yield* Health
  const service = yield* CurrentService
  return {
    ping: () => Effect.succeed("pong"),
    healthz: () =>
      Effect.flatMap(health.check, ({ ok, checks }) => {
        const body: HealthBody = { status: ok ? "ok" : "unavailable", service, version, checks }
        return ok ? Effect.succeed(body) : Effect.fail(body)
      })
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
