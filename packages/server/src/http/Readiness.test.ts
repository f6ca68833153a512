import { assert, describe, it } from "@effect/vitest"
import { lagAt, maxLagMs, sampleIntervalMs } from "./EventLoopLag.ts"
import { liveness, readiness, requiredChecks } from "./Readiness.ts"

const ok = { status: "ok" as const }
const down = { status: "unavailable" as const, error: "not reachable" }
const all = { database: ok, appMetricsDatabase: ok, counterStore: ok, runner: ok }

describe("readiness", () => {
  it("is ready when every check is ok", () => {
    for (const service of ["api", "admin-api", "public", "worker"] as const) {
      assert.deepStrictEqual(readiness(service, false, all), { ready: true })
    }
  })

  it("is not ready while shutting down, whatever the stores say", () => {
    assert.deepStrictEqual(readiness("api", true, all), { ready: false, reason: "shutting down" })
    assert.deepStrictEqual(readiness("worker", true, {}), { ready: false, reason: "shutting down" })
  })

  it("needs the database on every service", () => {
    for (const service of ["api", "admin-api", "public", "worker"] as const) {
      assert.deepStrictEqual(readiness(service, false, { ...all, database: down }), {
        ready: false,
        reason: "not reachable: database"
      })
    }
  })

  it("needs the counter store on public and admin-api (sessions), not on api (fail open) nor the worker", () => {
    const noCounters = { ...all, counterStore: down }
    assert.deepStrictEqual(readiness("public", false, noCounters), {
      ready: false,
      reason: "not reachable: counterStore"
    })
    assert.deepStrictEqual(readiness("admin-api", false, noCounters).ready, false)
    assert.deepStrictEqual(readiness("api", false, noCounters), { ready: true })
    assert.deepStrictEqual(readiness("worker", false, noCounters), { ready: true })
  })

  it("never needs the app-metrics database (request events spool)", () => {
    for (const service of ["api", "admin-api", "public", "worker"] as const) {
      assert.isFalse(requiredChecks(service).includes("appMetricsDatabase"))
      assert.deepStrictEqual(readiness(service, false, { ...all, appMetricsDatabase: down }), { ready: true })
    }
  })

  it("needs a worker's runner, and a missing check counts as down", () => {
    assert.deepStrictEqual(readiness("worker", false, { database: ok }), {
      ready: false,
      reason: "not reachable: runner"
    })
    assert.deepStrictEqual(readiness("worker", false, { database: down, runner: down }), {
      ready: false,
      reason: "not reachable: database, runner"
    })
  })
})

describe("liveness", () => {
  it("is live up to the lag limit, not beyond", () => {
    assert.deepStrictEqual(liveness(0), { ready: true })
    assert.deepStrictEqual(liveness(maxLagMs), { ready: true })
    assert.deepStrictEqual(liveness(maxLagMs + 1), {
      ready: false,
      reason: `event loop lag ${maxLagMs + 1} ms is over ${maxLagMs} ms`
    })
  })

  it("takes the lag of the last tick or how overdue the next one is, whichever is larger", () => {
    assert.strictEqual(lagAt(10_000, 9_500, 20), 20)
    assert.strictEqual(lagAt(10_000, 10_000 - sampleIntervalMs - 700, 20), 700)
    assert.strictEqual(lagAt(10_000, 9_999, 0), 0)
  })
})
