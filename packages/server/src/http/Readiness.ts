/**
 * What `GET /readyz` and `GET /livez` answer (docs/cluster.md "Probes and stopping"): pure rules
 * over the store checks of `/healthz`, the shutdown state and the event-loop lag.
 */
import type { ServiceId } from "@svc/domain/Auth"
import type { Health } from "@svc/domain/http/SystemApi"
import { maxLagMs } from "./EventLoopLag.ts"

type Checks = Health["checks"]

/**
 * The checks a service cannot take traffic without. The main database on every service. The
 * counter store on `public` and `admin-api`, whose browser sessions live in it; not on `api`,
 * where rate limits fail open by design (spec 4.6) and only a token with a `nonce` is refused
 * (503, per request), so a counter-store outage must not take every api process out of its load
 * balancer; not on the worker. The app-metrics database on none: request events spool while it
 * is down. A worker also needs its runner registered (`checks.runner`).
 */
export const requiredChecks = (service: ServiceId): ReadonlyArray<string> => {
  switch (service) {
    case "api":
      return ["database"]
    case "admin-api":
    case "public":
      return ["database", "counterStore"]
    case "worker":
      return ["database", "runner"]
  }
}

/** Ready, or why not (one short line, no store detail beyond its check name). */
export type Verdict = { readonly ready: true } | { readonly ready: false; readonly reason: string }

/** The readiness of `service`: not while shutting down, nor while a required check is not ok. */
export const readiness = (service: ServiceId, shuttingDown: boolean, checks: Checks): Verdict => {
  if (shuttingDown) return { ready: false, reason: "shutting down" }
  const down = requiredChecks(service).filter((name) => checks[name]?.status !== "ok")
  return down.length === 0 ? { ready: true } : { ready: false, reason: `not reachable: ${down.join(", ")}` }
}

/** Live while the event loop's lag is at most `maxLagMs`. */
export const liveness = (lagMs: number): Verdict =>
  lagMs <= maxLagMs
    ? { ready: true }
    : { ready: false, reason: `event loop lag ${Math.round(lagMs)} ms is over ${maxLagMs} ms` }
