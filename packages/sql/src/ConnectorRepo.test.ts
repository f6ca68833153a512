import { assert, layer } from "@effect/vitest"
import type { ConnectionId, ConnectorId } from "@svc/domain/Ids"
import { DateTime, Deferred, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectorRepo, type VersionState } from "./ConnectorRepo.ts"
import * as Migrations from "./Migrations.ts"
import { ResourceRepo } from "./ResourceRepo.ts"
import { ConnectorRow } from "./Rows.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { fixtureId, fixtures } from "./TestRows.ts"

const cxr = (tag: string) => fixtureId("cxr", tag)
const cxn = (tag: string) => fixtureId("cxn", tag)
const { at, envelope } = fixtures(456)

for (const [backend, db] of TestDatabase.backends) {
  const Test = Layer.mergeAll(ResourceRepo.layer, ConnectorRepo.layer).pipe(
    Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db))
  )

  layer(Test, { timeout: "60 seconds" })(`ConnectorRepo (${backend})`, (it) => {
    const connector = (id: ConnectorId, versions: ReadonlyArray<string>) =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const connectors = yield* ConnectorRepo
        yield* repo.insert("connectors", { id, ...envelope("root.cx", id), state: "draft", version: 1, type: "none" })
        for (const [i, type] of versions.entries()) yield* connectors.insertVersion(id, { type, n: i + 1 }, at(i))
      })

    const states = (id: ConnectorId) =>
      Effect.gen(function* () {
        const connectors = yield* ConnectorRepo
        return (yield* connectors.versions(id)).map((row) => `${row.version}:${row.state}`)
      })

    const current = (id: ConnectorId) =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const row = Option.getOrThrow(yield* repo.findLive("connectors", id, ConnectorRow))
        return [row.state, row.version, row.type, DateTime.toEpochMillis(row.updatedAt)] as ReadonlyArray<
          string | number
        >
      })

    it.effect("insertVersion numbers versions 1, 2, 3 per connector as drafts", () =>
      Effect.gen(function* () {
        const connectors = yield* ConnectorRepo
        yield* connector(cxr("num1"), [])
        yield* connector(cxr("num2"), ["http"])
        const first = yield* connectors.insertVersion(cxr("num1"), { type: "http", x: [1] }, at(7))
        assert.deepStrictEqual(
          [first.connectorId, first.version, first.state, first.definition],
          [cxr("num1"), 1, "draft", { type: "http", x: [1] }]
        )
        assert.strictEqual(DateTime.toEpochMillis(first.createdAt), at(7).getTime())
        assert.strictEqual((yield* connectors.insertVersion(cxr("num1"), { type: "grpc" }, at(8))).version, 2)
        assert.strictEqual((yield* connectors.insertVersion(cxr("num1"), { type: "grpc" }, at(9))).version, 3)
        assert.strictEqual((yield* connectors.insertVersion(cxr("num2"), { type: "grpc" }, at(9))).version, 2)
        assert.deepStrictEqual(yield* states(cxr("num1")), ["3:draft", "2:draft", "1:draft"])
        const two = Option.getOrThrow(yield* connectors.version(cxr("num1"), 2))
        assert.deepStrictEqual([two.version, two.definition], [2, { type: "grpc" }])
        assert.isTrue(Option.isNone(yield* connectors.version(cxr("num1"), 4)))
        assert.isTrue(Option.isNone(yield* connectors.version(cxr("nope"), 1)))
      })
    )

    it.effect("publishing a primary demotes the previous primary; the index allows one primary", () =>
      Effect.gen(function* () {
        const connectors = yield* ConnectorRepo
        const sql = yield* SqlClient.SqlClient
        yield* connector(cxr("pri1"), ["a", "b", "c"])
        yield* connector(cxr("pri2"), ["a"])
        yield* connectors.setState(cxr("pri1"), 1, "primary", at(10))
        yield* connectors.setState(cxr("pri2"), 1, "primary", at(10))
        assert.deepStrictEqual(yield* states(cxr("pri1")), ["3:draft", "2:draft", "1:primary"])
        yield* connectors.setState(cxr("pri1"), 2, "primary", at(11))
        assert.deepStrictEqual(yield* states(cxr("pri1")), ["3:draft", "2:primary", "1:active"])
        yield* connectors.setState(cxr("pri1"), 2, "primary", at(12))
        assert.deepStrictEqual(yield* states(cxr("pri1")), ["3:draft", "2:primary", "1:active"])
        assert.deepStrictEqual(yield* states(cxr("pri2")), ["1:primary"])
        const one = Option.getOrThrow(yield* connectors.version(cxr("pri1"), 1))
        assert.strictEqual(DateTime.toEpochMillis(one.updatedAt), at(11).getTime())
        const error = yield* Effect.flip(
          sql`UPDATE connector_versions SET state = 'primary' WHERE connector_id = ${cxr("pri1")} AND version = 3`
        )
        assert.strictEqual(error.reason._tag, "UniqueViolation")
        assert.deepStrictEqual(yield* states(cxr("pri1")), ["3:draft", "2:primary", "1:active"])
      })
    )

    it.effect("refreshCurrent picks primary, else newest active, draft, archived, and copies the type", () =>
      Effect.gen(function* () {
        const connectors = yield* ConnectorRepo
        yield* connector(cxr("cur1"), ["t1", "t2", "t3", "t4"])
        yield* connector(cxr("cur2"), ["u1"])
        const steps: ReadonlyArray<
          readonly [ReadonlyArray<readonly [number, VersionState]>, readonly [string, number, string]]
        > = [
          [[], ["draft", 4, "t4"]],
          [[[4, "archived"]], ["draft", 3, "t3"]],
          [[[1, "active"]], ["active", 1, "t1"]],
          [[[2, "active"]], ["active", 2, "t2"]],
          [[[1, "primary"]], ["primary", 1, "t1"]],
          [[[1, "active"]], ["active", 2, "t2"]],
          [
            [
              [1, "archived"],
              [2, "archived"],
              [3, "archived"]
            ],
            ["archived", 4, "t4"]
          ]
        ]
        for (const [i, [changes, expected]] of steps.entries()) {
          for (const [version, state] of changes) yield* connectors.setState(cxr("cur1"), version, state, at(20 + i))
          yield* connectors.refreshCurrent(cxr("cur1"), at(30 + i))
          assert.deepStrictEqual(yield* current(cxr("cur1")), [...expected, at(30 + i).getTime()], `step ${i}`)
        }
        assert.deepStrictEqual(yield* current(cxr("cur2")), ["draft", 1, "none", at(0).getTime()])
      })
    )

    it.effect("concurrent insertVersion transactions on one connector get consecutive numbers", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const connectors = yield* ConnectorRepo
        const sql = yield* SqlClient.SqlClient
        const database = yield* TestDatabase.TestDatabase
        yield* connector(cxr("race"), ["a"])
        const inserted = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        // PostgreSQL: keep the first transaction open until the second one waits on a lock (PGlite has one session).
        const releaseWhenBlocked = Effect.gen(function* () {
          yield* Deferred.await(inserted)
          for (let attempt = 0; database.backend === "postgres" && attempt < 1000; attempt++) {
            const [row] = yield* sql<{ waiting: number }>`SELECT count(*)::int AS waiting FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'`
            if ((row?.waiting ?? 0) > 0) return yield* Deferred.succeed(release, undefined)
            yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
          }
          yield* Deferred.succeed(release, undefined)
        })
        const first = repo.withTransaction(
          Effect.gen(function* () {
            const row = yield* connectors.insertVersion(cxr("race"), { type: "b" }, at(1))
            yield* Deferred.succeed(inserted, undefined)
            yield* Deferred.await(release)
            return row.version
          })
        )
        const second = Effect.andThen(
          Deferred.await(inserted),
          repo.withTransaction(
            Effect.map(connectors.insertVersion(cxr("race"), { type: "c" }, at(2)), (row) => row.version)
          )
        )
        const [versions] = yield* Effect.all([Effect.all([first, second], { concurrency: 2 }), releaseWhenBlocked], {
          concurrency: 2
        })
        assert.deepStrictEqual(versions, [2, 3])
        assert.deepStrictEqual(yield* states(cxr("race")), ["3:draft", "2:draft", "1:draft"])
      })
    )

    it.effect("connectionsOn counts the live connections of one version", () =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const connectors = yield* ConnectorRepo
        yield* connector(cxr("on1"), ["a", "b"])
        yield* connector(cxr("on2"), ["a"])
        const connection = (id: ConnectionId, connectorId: ConnectorId, version: number) =>
          repo.insert("connections", {
            id,
            ...envelope("root.cx", id),
            connectorId,
            connectorVersion: version,
            state: "configured",
            healthState: "healthy",
            setupStepId: null,
            configurationEnc: null
          })
        yield* connection(cxn("on1"), cxr("on1"), 1)
        yield* connection(cxn("on2"), cxr("on1"), 1)
        yield* connection(cxn("on3"), cxr("on1"), 1)
        yield* connection(cxn("on4"), cxr("on1"), 2)
        yield* connection(cxn("on5"), cxr("on2"), 1)
        yield* repo.softDelete("connections", cxn("on3"), at(1))
        assert.strictEqual(yield* connectors.connectionsOn(cxr("on1"), 1), 2)
        assert.strictEqual(yield* connectors.connectionsOn(cxr("on1"), 2), 1)
        assert.strictEqual(yield* connectors.connectionsOn(cxr("on2"), 1), 1)
        assert.strictEqual(yield* connectors.connectionsOn(cxr("on2"), 2), 0)
      })
    )
  })
}
