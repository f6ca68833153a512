import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectorRepo } from "./ConnectorRepo.ts"
import * as Migrations from "./Migrations.ts"
import { ProbeStateRepo } from "./ProbeStateRepo.ts"
import { ResourceRepo } from "./ResourceRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { at, envelope, fixtureId } from "./TestRows.ts"

/** The inverse of `at`, for timestamps read back from the database. */
const secondsOf = (date: Date): number => (new Date(date).getTime() - at(0).getTime()) / 1000

/** A probe of a connector definition; only one with a `period` is scheduled. */
const probe = (id: string, period?: string) => ({
  id,
  url: `https://api.example.com/${id}`,
  ...(period === undefined ? {} : { period })
})

type Outcome = "success" | "failure"

for (const [backend, db] of TestDatabase.backends) {
  const Test = Layer.mergeAll(ResourceRepo.layer, ConnectorRepo.layer, ProbeStateRepo.layer).pipe(
    Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db))
  )

  layer(Test, { timeout: "60 seconds" })(`ProbeStateRepo (${backend})`, (it) => {
    // sync and claimDue work on every row: each test starts with no live connection and no schedule.
    const clean = Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE connections SET deleted_at = ${at(0)} WHERE deleted_at IS NULL`
      yield* sql`DELETE FROM probe_states`
    })

    /** A connector with one version per entry of `versions`, each a list of probes. */
    /** Connectors are named by a tag: their ids are the tag's fixture id. */
    const connector = (tag: string, versions: ReadonlyArray<ReadonlyArray<object> | undefined>) =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const connectors = yield* ConnectorRepo
        const id = fixtureId("cxr", tag)
        yield* repo.insert("connectors", { id, ...envelope("root.px", id), state: "draft", version: 1, type: "http" })
        for (const [i, probes] of versions.entries()) {
          yield* connectors.insertVersion(id, probes === undefined ? { type: "http" } : { type: "http", probes }, at(i))
        }
      })

    const connection = (id: string, connectorTag: string, version: number, state = "configured", health = "healthy") =>
      Effect.flatMap(ResourceRepo, (repo) =>
        repo.insert("connections", {
          id,
          ...envelope("root.px", id),
          connectorId: fixtureId("cxr", connectorTag),
          connectorVersion: version,
          state,
          healthState: health,
          setupStepId: null,
          configurationEnc: null,
          credentialsEnc: null
        })
      )

    /** Every schedule as `connection/probe@nextRunSeconds`. */
    const schedules = Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.map(
        sql<{ connectionId: string; probeId: string; nextRunAt: Date }>`
          SELECT connection_id, probe_id, next_run_at FROM probe_states ORDER BY connection_id, probe_id`,
        (rows) => rows.map((row) => `${row.connectionId}/${row.probeId}@${secondsOf(row.nextRunAt)}`)
      )
    )

    /** A schedule's `failures/successes/failing`, or `none`. */
    const counters = (connectionId: string, probeId: string) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ consecutiveFailures: number; consecutiveSuccesses: number; failing: boolean }>`
          SELECT consecutive_failures, consecutive_successes, failing FROM probe_states
          WHERE connection_id = ${connectionId} AND probe_id = ${probeId}`
        return row === undefined
          ? "none"
          : `${row.consecutiveFailures}/${row.consecutiveSuccesses}/${row.failing ? "failing" : "ok"}`
      })

    /** A connection's `healthState@updatedAtSeconds`. */
    const health = (connectionId: string) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ healthState: string; updatedAt: Date }>`
          SELECT health_state, updated_at FROM connections WHERE id = ${connectionId}`
        assert.isDefined(row)
        return `${row.healthState}@${secondsOf(row.updatedAt)}`
      })

    const record = (
      connectionId: string,
      probeId: string,
      outcome: Outcome,
      seconds: number,
      failureThreshold = 3,
      recoveryThreshold = 2
    ) =>
      Effect.flatMap(ProbeStateRepo, (probes) =>
        probes.record({
          connectionId,
          probeId,
          outcome,
          statusCode: outcome === "success" ? 200 : 503,
          error: outcome === "success" ? undefined : "status 503",
          checkedAt: at(seconds),
          nextRunAt: at(seconds + 60),
          failureThreshold,
          recoveryThreshold
        })
      )

    it.effect("sync schedules each periodic probe of live configured connections, once", () =>
      Effect.gen(function* () {
        const probes = yield* ProbeStateRepo
        const repo = yield* ResourceRepo
        yield* clean
        yield* connector("cxp_sync", [
          [probe("p1", "30 seconds"), probe("p2", "5 minutes"), probe("od"), { ...probe("off", "1m"), enabled: false }],
          undefined
        ])
        yield* connection("cxn_sync_a", "cxp_sync", 1)
        yield* connection("cxn_sync_b", "cxp_sync", 1, "configured", "unhealthy")
        yield* connection("cxn_sync_nop", "cxp_sync", 2)
        for (const state of ["setup", "disabled", "disconnecting", "disconnected"]) {
          yield* connection(`cxn_sync_${state}`, "cxp_sync", 1, state)
        }
        yield* connection("cxn_sync_del", "cxp_sync", 1)
        yield* repo.softDelete("connections", "cxn_sync_del", at(1))
        assert.strictEqual(yield* probes.sync(at(5)), 4)
        const expected = ["cxn_sync_a/p1@5", "cxn_sync_a/p2@5", "cxn_sync_b/p1@5", "cxn_sync_b/p2@5"]
        assert.deepStrictEqual(yield* schedules, expected)
        assert.strictEqual(yield* counters("cxn_sync_a", "p1"), "0/0/ok")
        assert.strictEqual(yield* probes.sync(at(9)), 0)
        assert.deepStrictEqual(yield* schedules, expected)
      })
    )

    it.effect("sync drops schedules of deleted or unconfigured connections and of vanished probes", () =>
      Effect.gen(function* () {
        const probes = yield* ProbeStateRepo
        const repo = yield* ResourceRepo
        const sql = yield* SqlClient.SqlClient
        yield* clean
        yield* connector("cxp_drop", [
          [probe("p1", "30 seconds"), probe("p2", "30 seconds")],
          [probe("p1"), probe("p2", "1 minute")],
          [probe("p1", "30 seconds")]
        ])
        for (const id of ["cxn_drop_del", "cxn_drop_off", "cxn_drop_mv", "cxn_drop_keep"]) {
          yield* connection(id, "cxp_drop", 1)
        }
        assert.strictEqual(yield* probes.sync(at(1)), 8)
        yield* record("cxn_drop_off", "p1", "failure", 2)
        yield* record("cxn_drop_keep", "p1", "failure", 2)
        yield* repo.softDelete("connections", "cxn_drop_del", at(3))
        yield* sql`UPDATE connections SET state = 'disabled' WHERE id = 'cxn_drop_off'`
        yield* sql`UPDATE connections SET connector_version = 2 WHERE id = 'cxn_drop_mv'`
        assert.strictEqual(yield* probes.sync(at(4)), 0)
        assert.deepStrictEqual(yield* schedules, ["cxn_drop_keep/p1@62", "cxn_drop_keep/p2@1", "cxn_drop_mv/p2@1"])
        yield* sql`UPDATE connections SET connector_version = 3 WHERE id = 'cxn_drop_mv'`
        yield* sql`UPDATE connections SET state = 'configured' WHERE id = 'cxn_drop_off'`
        assert.strictEqual(yield* probes.sync(at(5)), 3)
        assert.deepStrictEqual(yield* schedules, [
          "cxn_drop_keep/p1@62",
          "cxn_drop_keep/p2@1",
          "cxn_drop_mv/p1@5",
          "cxn_drop_off/p1@5",
          "cxn_drop_off/p2@5"
        ])
        // A schedule that came back starts over; one that stayed keeps its counters.
        assert.strictEqual(yield* counters("cxn_drop_off", "p1"), "0/0/ok")
        assert.strictEqual(yield* counters("cxn_drop_keep", "p1"), "1/0/ok")
      })
    )

    it.effect("claimDue claims due schedules oldest first, at most limit, and leases them", () =>
      Effect.gen(function* () {
        const probes = yield* ProbeStateRepo
        const sql = yield* SqlClient.SqlClient
        yield* clean
        yield* connector("cxp_due", [[probe("p1", "30 seconds")]])
        const due = { cxn_due_a: 10, cxn_due_b: 5, cxn_due_c: 20, cxn_due_d: 30, cxn_due_e: 50 }
        for (const [id, seconds] of Object.entries(due)) {
          yield* connection(id, "cxp_due", 1)
          yield* probes.sync(at(0))
          yield* sql`UPDATE probe_states SET next_run_at = ${at(seconds)} WHERE connection_id = ${id}`
        }
        yield* record("cxn_due_b", "p1", "failure", 1, 1, 1)
        yield* sql`UPDATE probe_states SET next_run_at = ${at(5)} WHERE connection_id = 'cxn_due_b'`
        const claim = (now: number, lease: number, limit: number) =>
          Effect.map(probes.claimDue(at(now), at(lease), limit), (rows) => rows.map((row) => row.connectionId).sort())
        const first = yield* probes.claimDue(at(25), at(100), 2)
        assert.deepStrictEqual(
          [...first].sort((a, b) => a.connectionId.localeCompare(b.connectionId)),
          [
            {
              connectionId: "cxn_due_a",
              probeId: "p1",
              consecutiveFailures: 0,
              consecutiveSuccesses: 0,
              failing: false
            },
            { connectionId: "cxn_due_b", probeId: "p1", consecutiveFailures: 1, consecutiveSuccesses: 0, failing: true }
          ]
        )
        assert.deepStrictEqual(yield* schedules, [
          "cxn_due_a/p1@100",
          "cxn_due_b/p1@100",
          "cxn_due_c/p1@20",
          "cxn_due_d/p1@30",
          "cxn_due_e/p1@50"
        ])
        assert.deepStrictEqual(yield* claim(25, 100, 10), ["cxn_due_c"])
        assert.deepStrictEqual(yield* claim(25, 100, 10), [])
        assert.deepStrictEqual(yield* claim(50, 200, 10), ["cxn_due_d", "cxn_due_e"])
        assert.deepStrictEqual(yield* claim(50, 200, 10), [])
        assert.deepStrictEqual(yield* claim(100, 300, 0), [])
        assert.deepStrictEqual(yield* claim(100, 300, 10), ["cxn_due_a", "cxn_due_b", "cxn_due_c"])
        // Concurrent ticks never claim one schedule twice.
        const [one, two] = yield* Effect.all([claim(300, 400, 3), claim(300, 400, 3)], { concurrency: 2 })
        assert.deepStrictEqual([...one, ...two].sort(), [
          "cxn_due_a",
          "cxn_due_b",
          "cxn_due_c",
          "cxn_due_d",
          "cxn_due_e"
        ])
      })
    )

    it.effect("record counts consecutive outcomes; failing needs failureThreshold, recovery recoveryThreshold", () =>
      Effect.gen(function* () {
        const probes = yield* ProbeStateRepo
        const sql = yield* SqlClient.SqlClient
        yield* clean
        yield* connector("cxp_rec", [[probe("p1", "30 seconds")]])
        yield* connection("cxn_rec", "cxp_rec", 1)
        yield* probes.sync(at(0))
        const unhealthy = { connectionId: "cxn_rec", healthState: "unhealthy" } as const
        const healthy = { connectionId: "cxn_rec", healthState: "healthy" } as const
        const steps: ReadonlyArray<readonly [Outcome, string, object | undefined, string]> = [
          ["failure", "1/0/ok", undefined, "healthy@0"],
          ["failure", "2/0/ok", undefined, "healthy@0"],
          ["success", "0/1/ok", undefined, "healthy@0"],
          ["failure", "1/0/ok", undefined, "healthy@0"],
          ["failure", "2/0/ok", undefined, "healthy@0"],
          ["failure", "3/0/failing", unhealthy, "unhealthy@18"],
          ["failure", "4/0/failing", undefined, "unhealthy@18"],
          ["success", "0/1/failing", undefined, "unhealthy@18"],
          ["failure", "1/0/failing", undefined, "unhealthy@18"],
          ["success", "0/1/failing", undefined, "unhealthy@18"],
          ["success", "0/2/ok", healthy, "healthy@33"],
          ["success", "0/3/ok", undefined, "healthy@33"]
        ]
        for (const [i, [outcome, expected, change, state]] of steps.entries()) {
          const seconds = 3 * (i + 1)
          assert.deepStrictEqual(yield* record("cxn_rec", "p1", outcome, seconds), change, `step ${i}`)
          assert.strictEqual(yield* counters("cxn_rec", "p1"), expected, `step ${i}`)
          assert.strictEqual(yield* health("cxn_rec"), state, `step ${i}`)
        }
        yield* record("cxn_rec", "p1", "failure", 40)
        const last = Effect.map(
          sql<{
            lastOutcome: string
            lastStatusCode: number
            lastError: string | null
            lastCheckedAt: Date
            nextRunAt: Date
          }>`
            SELECT last_outcome, last_status_code, last_error, last_checked_at, next_run_at
            FROM probe_states WHERE connection_id = 'cxn_rec'`,
          (rows) =>
            rows.map((row) => [
              row.lastOutcome,
              row.lastStatusCode,
              row.lastError,
              secondsOf(row.lastCheckedAt),
              secondsOf(row.nextRunAt)
            ])
        )
        assert.deepStrictEqual(yield* last, [["failure", 503, "status 503", 40, 100]])
        yield* record("cxn_rec", "p1", "success", 41)
        assert.deepStrictEqual(yield* last, [["success", 200, null, 41, 101]])
      })
    )

    it.effect("record for a dropped or unknown schedule returns undefined and changes nothing", () =>
      Effect.gen(function* () {
        const probes = yield* ProbeStateRepo
        const repo = yield* ResourceRepo
        yield* clean
        yield* connector("cxp_gone", [[probe("p1", "30 seconds"), probe("od")]])
        yield* connection("cxn_gone_a", "cxp_gone", 1)
        yield* connection("cxn_gone_b", "cxp_gone", 1)
        yield* probes.sync(at(0))
        yield* repo.softDelete("connections", "cxn_gone_a", at(1))
        // Deleted, schedule not yet dropped: the run is kept but the connection's health is not touched.
        assert.isUndefined(yield* record("cxn_gone_a", "p1", "failure", 2, 1, 1))
        assert.strictEqual(yield* counters("cxn_gone_a", "p1"), "1/0/failing")
        yield* probes.sync(at(2))
        assert.isUndefined(yield* record("cxn_gone_a", "p1", "failure", 3, 1, 1))
        assert.isUndefined(yield* record("cxn_gone_b", "od", "failure", 3, 1, 1))
        assert.isUndefined(yield* record("cxn_gone_b", "nope", "failure", 3, 1, 1))
        assert.isUndefined(yield* record("cxn_none", "p1", "failure", 3, 1, 1))
        assert.deepStrictEqual(yield* schedules, ["cxn_gone_b/p1@0"])
        assert.strictEqual(yield* counters("cxn_gone_b", "p1"), "0/0/ok")
        assert.strictEqual(yield* health("cxn_gone_a"), "healthy@1")
        assert.strictEqual(yield* health("cxn_gone_b"), "healthy@0")
      })
    )

    it.effect("a connection stays unhealthy while any of its probes is failing", () =>
      Effect.gen(function* () {
        const probes = yield* ProbeStateRepo
        yield* clean
        yield* connector("cxp_two", [[probe("p1", "30 seconds"), probe("p2", "1 minute")]])
        yield* connection("cxn_two", "cxp_two", 1)
        yield* connection("cxn_two_other", "cxp_two", 1, "configured", "unhealthy")
        yield* probes.sync(at(0))
        const unhealthy = { connectionId: "cxn_two", healthState: "unhealthy" }
        const healthy = { connectionId: "cxn_two", healthState: "healthy" }
        const steps: ReadonlyArray<readonly [string, Outcome, object | undefined, string]> = [
          ["p1", "failure", unhealthy, "unhealthy@1"],
          ["p2", "failure", undefined, "unhealthy@1"],
          ["p1", "success", undefined, "unhealthy@1"],
          ["p1", "failure", undefined, "unhealthy@1"],
          ["p2", "success", undefined, "unhealthy@1"],
          ["p1", "success", healthy, "healthy@6"],
          ["p2", "failure", unhealthy, "unhealthy@7"],
          ["p2", "success", healthy, "healthy@8"]
        ]
        for (const [i, [probeId, outcome, change, state]] of steps.entries()) {
          assert.deepStrictEqual(yield* record("cxn_two", probeId, outcome, i + 1, 1, 1), change, `step ${i}`)
          assert.strictEqual(yield* health("cxn_two"), state, `step ${i}`)
        }
        // Health follows only the connection's own probes: one stored unhealthy heals on a run while
        // another connection's probe is failing.
        yield* record("cxn_two", "p1", "failure", 9, 1, 1)
        const other = { connectionId: "cxn_two_other", healthState: "healthy" }
        assert.deepStrictEqual(yield* record("cxn_two_other", "p1", "success", 10, 1, 1), other)
        assert.strictEqual(yield* health("cxn_two_other"), "healthy@10")
      })
    )

    // spec 4.3 rule 4: a probe success must not clear "re-authentication required".
    it.effect("a connection with an active re-authentication notice stays unhealthy after probe successes", () =>
      Effect.gen(function* () {
        const probes = yield* ProbeStateRepo
        const sql = yield* SqlClient.SqlClient
        yield* clean
        yield* connector("cxp_reauth", [[probe("p1", "30 seconds")]])
        yield* connection("cxn_reauth", "cxp_reauth", 1, "configured", "unhealthy")
        yield* probes.sync(at(0))
        const notice = (id: string, key: string) =>
          sql`INSERT INTO notifications (id, connection_id, namespace, key, level, title, message, action_url, metadata,
              created_at, updated_at)
            VALUES (${id}, 'cxn_reauth', 'root.px', ${key}, 'warning', 'T', '', NULL, '{}'::jsonb, ${at(0)}, ${at(0)})`
        yield* notice("ntf_reauth_setup", "svc.setup")
        yield* notice("ntf_reauth", "svc.reauth")
        assert.strictEqual(yield* record("cxn_reauth", "p1", "success", 1, 1, 1), undefined)
        assert.match(yield* health("cxn_reauth"), /^unhealthy@/)
        // Once re-authentication is resolved, the next success heals it.
        yield* sql`UPDATE notifications SET resolved_at = ${at(2)} WHERE id = 'ntf_reauth'`
        assert.deepStrictEqual(yield* record("cxn_reauth", "p1", "success", 3, 1, 1), {
          connectionId: "cxn_reauth",
          healthState: "healthy"
        })
      })
    )

    // Runs of two probes of one connection recorded concurrently must not compute health from
    // snapshots that miss each other (record locks the connection first).
    it.effect("concurrent runs of two probes of one connection leave a consistent health", () =>
      Effect.gen(function* () {
        const probes = yield* ProbeStateRepo
        const sql = yield* SqlClient.SqlClient
        const database = yield* TestDatabase.TestDatabase
        yield* clean
        yield* connector("cxp_race", [[probe("p1", "30 seconds"), probe("p2", "1 minute")]])
        yield* connection("cxn_race", "cxp_race", 1)
        yield* probes.sync(at(0))
        yield* record("cxn_race", "p2", "failure", 1, 1, 1)
        const recorded = yield* Deferred.make<void>()
        const secondDone = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        // The p1 failure stays uncommitted until the p2 success has finished or waits on a lock
        // (PostgreSQL; PGlite has one session, so the second run waits for the first to commit).
        const first = sql.withTransaction(
          Effect.gen(function* () {
            yield* record("cxn_race", "p1", "failure", 2, 1, 1)
            yield* Deferred.succeed(recorded, undefined)
            yield* Deferred.await(release)
          })
        )
        const second = Effect.andThen(
          Deferred.await(recorded),
          Effect.ensuring(record("cxn_race", "p2", "success", 3, 1, 1), Deferred.succeed(secondDone, undefined))
        )
        const releaseWhenBlocked = Effect.gen(function* () {
          yield* Deferred.await(recorded)
          for (let attempt = 0; database.backend === "postgres" && attempt < 1000; attempt++) {
            if (yield* Deferred.isDone(secondDone)) break
            const [row] = yield* sql<{ waiting: number }>`SELECT count(*)::int AS waiting FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'`
            if ((row?.waiting ?? 0) > 0) break
            yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
          }
          yield* Deferred.succeed(release, undefined)
        })
        yield* Effect.all([first, second, releaseWhenBlocked], { concurrency: 3 })
        assert.strictEqual(yield* counters("cxn_race", "p1"), "1/0/failing")
        assert.strictEqual(yield* counters("cxn_race", "p2"), "0/1/ok")
        assert.match(yield* health("cxn_race"), /^unhealthy@/)
      })
    )
  })
}
