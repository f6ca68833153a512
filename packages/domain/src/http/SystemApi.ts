/** Liveness and readiness endpoints every service answers without authentication. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { ServiceId } from "../Auth.ts"
import { ServiceUnavailable } from "../Errors.ts"

/** Reachability of one store: `ok`, or `unavailable` with a short reason. */
export const StoreCheck = Schema.Struct({
  status: Schema.Literals(["ok", "unavailable"]),
  error: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "StoreCheck" })

/** A worker's cluster runner: its address, registration, health and the shards it owns now. */
export const RunnerState = Schema.Struct({
  address: Schema.String,
  registered: Schema.Boolean,
  healthy: Schema.Boolean,
  shuttingDown: Schema.Boolean,
  ownedShards: Schema.Int,
  totalShards: Schema.Int,
  activeEntities: Schema.Int
}).annotate({ identifier: "RunnerState" })
export type RunnerState = typeof RunnerState.Type

/**
 * One OTLP exporter of the process (docs/telemetry.md "Exporter health"): `failing` since its last
 * attempt failed (`error`: `http <status>` or the transport error's kind), `ok` once one succeeds;
 * `failures` counts the failed attempts since the start.
 */
export const ExporterCheck = Schema.Struct({
  status: Schema.Literals(["ok", "failing"]),
  error: Schema.optionalKey(Schema.String),
  failures: Schema.Int
}).annotate({ identifier: "ExporterCheck" })

/**
 * Body of `GET /healthz`: overall status and one check per store the service uses; a worker adds
 * its runner's state (`checks.runner` is `unavailable` while it is not registered). With OTLP
 * export on, `telemetry` has one entry per exported signal (`traces`, `metrics`, `logs`); a failing
 * exporter does not make the service unavailable.
 */
export const Health = Schema.Struct({
  status: Schema.Literals(["ok", "unavailable"]),
  service: ServiceId,
  version: Schema.String,
  checks: Schema.Record(Schema.String, StoreCheck),
  runner: Schema.optionalKey(RunnerState),
  telemetry: Schema.optionalKey(Schema.Record(Schema.String, ExporterCheck))
}).annotate({ identifier: "Health" })
export type Health = typeof Health.Type

/** Body of a passing `GET /livez` or `GET /readyz`. */
export const ProbeOk = Schema.Struct({ status: Schema.Literal("ok") }).annotate({ identifier: "ProbeOk" })
export type ProbeOk = typeof ProbeOk.Type

export class SystemApi extends HttpApiGroup.make("system", { topLevel: true })
  .add(
    HttpApiEndpoint.get("ping", "/ping", {
      success: Schema.String.pipe(HttpApiSchema.asText())
    }).annotate(OpenApi.Description, "Liveness: answers `pong` while the process is up."),
    HttpApiEndpoint.get("healthz", "/healthz", {
      success: Health,
      error: Health.pipe(HttpApiSchema.status(503))
    }).annotate(OpenApi.Description, "Readiness: 200 when every store the service needs answers, else 503."),
    HttpApiEndpoint.get("livez", "/livez", {
      success: ProbeOk,
      error: ServiceUnavailable
    }).annotate(
      OpenApi.Description,
      "Kubernetes liveness: 200 while the event loop keeps up; 503 `not_live` when its last measured lag is over 5 s."
    ),
    HttpApiEndpoint.get("readyz", "/readyz", {
      success: ProbeOk,
      error: ServiceUnavailable
    }).annotate(
      OpenApi.Description,
      "Kubernetes readiness: 200 when the service takes traffic; 503 `not_ready` while shutting down or while a store it cannot work without is unreachable (a worker: also while its runner is not registered)."
    )
  )
  .annotate(OpenApi.Title, "System") {}
