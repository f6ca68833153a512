import { assert, layer } from "@effect/vitest"
import { Deferred, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectorRepo } from "./ConnectorRepo.ts"
import { ancestorsOf, DataKeyRepo, type DataKeyRow, type SecretRow } from "./DataKeyRepo.ts"
import * as Migrations from "./Migrations.ts"
import { jsonb, ResourceRepo } from "./ResourceRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { at, envelope, fixtureId } from "./TestRows.ts"

const dataKey = (keyId: string, version: number, rootKeyId = "r1"): DataKeyRow => ({
  keyId,
  version,
  wrapped: `wrapped-${keyId}-${version}`,
  rootKeyId,
  createdAt: at(version)
})

for (const [backend, db] of TestDatabase.backends) {
  const Test = Layer.mergeAll(ResourceRepo.layer, ConnectorRepo.layer, DataKeyRepo.layer).pipe(
    Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db))
  )

  layer(Test, { timeout: "60 seconds" })(`DataKeyRepo (${backend})`, (it) => {
    const key = (id: string, namespace: string, createdAt = at(0)) =>
      Effect.flatMap(ResourceRepo, (repo) => repo.insert("keys", { id, ...envelope(namespace, id, createdAt) }))

    it.effect("stores versions once, finds them and reports the highest per key", () =>
      Effect.gen(function* () {
        const keys = yield* DataKeyRepo
        assert.isTrue(yield* keys.insert(dataKey("key_v", 1)))
        assert.isTrue(yield* keys.insert(dataKey("key_v", 2)))
        assert.isFalse(yield* keys.insert({ ...dataKey("key_v", 2), wrapped: "other" }))
        assert.isTrue(yield* keys.insert(dataKey("key_w", 1)))
        const two = Option.getOrThrow(yield* keys.find("key_v", 2))
        assert.deepStrictEqual(two, dataKey("key_v", 2))
        assert.isTrue(Option.isNone(yield* keys.find("key_v", 3)))
        assert.deepStrictEqual(yield* keys.latestVersion("key_v"), Option.some(2))
        assert.isTrue(Option.isNone(yield* keys.latestVersion("key_none")))
        assert.deepStrictEqual(
          yield* keys.latestVersions(["key_v", "key_w", "key_none"]),
          new Map([
            ["key_v", 2],
            ["key_w", 1]
          ])
        )
        assert.deepStrictEqual(yield* keys.latestVersions([]), new Map())
      })
    )

    it.effect("lists the distinct root key ids", () =>
      Effect.gen(function* () {
        const keys = yield* DataKeyRepo
        yield* keys.insert(dataKey("key_r", 1, "r2"))
        yield* keys.insert(dataKey("key_r", 2, "r2"))
        assert.isTrue((yield* keys.rootKeyIds).includes("r2"))
        assert.strictEqual((yield* keys.rootKeyIds).filter((id) => id === "r2").length, 1)
      })
    )

    it.effect("resolves the nearest live key resource: self first, newest within a namespace", () =>
      Effect.gen(function* () {
        const keys = yield* DataKeyRepo
        const repo = yield* ResourceRepo
        assert.deepStrictEqual(ancestorsOf("root.n.a.b"), ["root.n.a.b", "root.n.a", "root.n", "root"])
        const nearest = (namespace: string) =>
          Effect.map(keys.nearestKey(namespace), (found) => Option.getOrUndefined(found))
        assert.isUndefined(yield* nearest("root.n"))
        yield* key("key_na", "root.n.a", at(1))
        yield* keys.insert(dataKey("key_na", 1))
        assert.deepStrictEqual(yield* nearest("root.n.a"), { keyId: "key_na", version: 1 })
        assert.deepStrictEqual(yield* nearest("root.n.a.b.c"), { keyId: "key_na", version: 1 })
        assert.isUndefined(yield* nearest("root.n"))
        assert.isUndefined(yield* nearest("root.n.ab"))
        yield* key("key_nab_old", "root.n.a.b", at(2))
        yield* key("key_nab_new", "root.n.a.b", at(3))
        yield* keys.insert(dataKey("key_nab_new", 1))
        yield* keys.insert(dataKey("key_nab_new", 2))
        assert.deepStrictEqual(yield* nearest("root.n.a.b.c"), { keyId: "key_nab_new", version: 2 })
        assert.deepStrictEqual(yield* nearest("root.n.a"), { keyId: "key_na", version: 1 })
        yield* repo.softDelete("keys", "key_nab_new", at(4))
        assert.deepStrictEqual(yield* nearest("root.n.a.b"), { keyId: "key_nab_old", version: null })
      })
    )

    it.effect("queues re-encryptions in order and completes them up to an id", () =>
      Effect.gen(function* () {
        const keys = yield* DataKeyRepo
        yield* keys.enqueueReencryption("key_q1", at(1))
        yield* keys.enqueueReencryption("key_q2", at(2))
        yield* keys.enqueueReencryption("key_q3", at(3))
        const pending = yield* keys.pendingReencryptions(10)
        assert.deepStrictEqual(
          pending.map((task) => task.keyId),
          ["key_q1", "key_q2", "key_q3"]
        )
        assert.match(pending[0]!.id, /^[0-9]+$/)
        assert.strictEqual((yield* keys.pendingReencryptions(2)).length, 2)
        assert.deepStrictEqual(
          (yield* keys.pendingReencryptions(10, at(2))).map((task) => task.keyId),
          ["key_q1", "key_q2"]
        )
        assert.deepStrictEqual(yield* keys.pendingReencryptions(10, at(0)), [])
        yield* keys.completeReencryptions(pending[1]!.id)
        assert.deepStrictEqual(
          (yield* keys.pendingReencryptions(10)).map((task) => task.keyId),
          ["key_q3"]
        )
        yield* keys.completeReencryptions(pending[2]!.id)
      })
    )

    it.effect("pages live connections by id and swaps secrets only when unchanged", () =>
      Effect.gen(function* () {
        const keys = yield* DataKeyRepo
        const repo = yield* ResourceRepo
        const sql = yield* SqlClient.SqlClient
        const connectorId = fixtureId("cxr", "s")
        yield* repo.insert("connectors", {
          id: connectorId,
          ...envelope("root.s", connectorId),
          state: "draft",
          version: 1,
          type: "none"
        })
        yield* Effect.flatMap(ConnectorRepo, (connectors) =>
          connectors.insertVersion(connectorId, { type: "none" }, at(0))
        )
        const connection = (id: string, columns: Record<string, unknown>) =>
          repo.insert("connections", {
            id,
            ...envelope("root.s", id),
            connectorId,
            connectorVersion: 1,
            state: "configured",
            healthState: "healthy",
            setupStepId: null,
            ...columns
          })
        yield* connection("cxn_s1", { configurationEnc: "c1", credentialsEnc: "k1" })
        yield* connection("cxn_s2", { legacyConfiguration: jsonb({ region: "eu", n: [1] }) })
        yield* connection("cxn_s3", {})
        yield* connection("cxn_s4", { configurationEnc: "c4" })
        yield* repo.softDelete("connections", "cxn_s3", at(1))
        const first = yield* keys.secretsPage(undefined, 2)
        assert.deepStrictEqual(first, [
          {
            id: "cxn_s1",
            namespace: "root.s",
            configurationEnc: "c1",
            credentialsEnc: "k1",
            legacyConfiguration: null
          },
          {
            id: "cxn_s2",
            namespace: "root.s",
            configurationEnc: null,
            credentialsEnc: null,
            legacyConfiguration: { region: "eu", n: [1] }
          }
        ])
        const rest = yield* keys.secretsPage("cxn_s2", 2)
        assert.deepStrictEqual(
          rest.map((row) => row.id),
          ["cxn_s4"]
        )
        assert.deepStrictEqual(yield* keys.secretsPage("cxn_s4", 2), [])

        const [s1, s2] = first as [SecretRow, SecretRow]
        assert.isTrue(yield* keys.swapSecrets(s1, { configurationEnc: "c1b", credentialsEnc: "k1b" }))
        assert.isFalse(yield* keys.swapSecrets(s1, { configurationEnc: "c1c", credentialsEnc: "k1c" }))
        assert.isTrue(yield* keys.swapSecrets(s2, { configurationEnc: "c2", credentialsEnc: null }))
        assert.isFalse(yield* keys.swapSecrets(s2, { configurationEnc: "c2x", credentialsEnc: null }))
        // A concurrent writer changed the credentials of s4 after it was read: the swap leaves them alone.
        const [s4] = rest as [SecretRow]
        yield* sql`UPDATE connections SET credentials_enc = 'fresh' WHERE id = 'cxn_s4'`
        assert.isFalse(yield* keys.swapSecrets(s4, { configurationEnc: "c4b", credentialsEnc: null }))
        const stored = yield* sql<{
          id: string
          configurationEnc: string | null
          credentialsEnc: string | null
          legacyConfiguration: unknown
        }>`
          SELECT id, configuration_enc, credentials_enc, legacy_configuration FROM connections
          WHERE id IN ('cxn_s1', 'cxn_s2', 'cxn_s4') ORDER BY id`
        assert.deepStrictEqual(stored, [
          { id: "cxn_s1", configurationEnc: "c1b", credentialsEnc: "k1b", legacyConfiguration: null },
          { id: "cxn_s2", configurationEnc: "c2", credentialsEnc: null, legacyConfiguration: null },
          { id: "cxn_s4", configurationEnc: "c4", credentialsEnc: "fresh", legacyConfiguration: null }
        ])
      })
    )

    it.effect("lockFirst serialises concurrent rotations of one key into consecutive versions", () =>
      Effect.gen(function* () {
        const keys = yield* DataKeyRepo
        const repo = yield* ResourceRepo
        const sql = yield* SqlClient.SqlClient
        const database = yield* TestDatabase.TestDatabase
        yield* keys.insert(dataKey("key_race", 1))
        assert.isFalse(yield* repo.withTransaction(keys.lockFirst("key_absent")))
        const rotate = repo.withTransaction(
          Effect.gen(function* () {
            assert.isTrue(yield* keys.lockFirst("key_race"))
            const next = Option.getOrElse(yield* keys.latestVersion("key_race"), () => 0) + 1
            yield* keys.insert(dataKey("key_race", next))
            return next
          })
        )
        const locked = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        // PostgreSQL: hold the first transaction until the second waits on the lock (PGlite has one session).
        const releaseWhenBlocked = Effect.gen(function* () {
          yield* Deferred.await(locked)
          for (let attempt = 0; database.backend === "postgres" && attempt < 1000; attempt++) {
            const [row] = yield* sql<{ waiting: number }>`SELECT count(*)::int AS waiting FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock'`
            if ((row?.waiting ?? 0) > 0) break
            yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
          }
          yield* Deferred.succeed(release, undefined)
        })
        const first = repo.withTransaction(
          Effect.gen(function* () {
            yield* keys.lockFirst("key_race")
            const next = Option.getOrElse(yield* keys.latestVersion("key_race"), () => 0) + 1
            yield* keys.insert(dataKey("key_race", next))
            yield* Deferred.succeed(locked, undefined)
            yield* Deferred.await(release)
            return next
          })
        )
        const second = Effect.andThen(Deferred.await(locked), rotate)
        const [versions] = yield* Effect.all([Effect.all([first, second], { concurrency: 2 }), releaseWhenBlocked], {
          concurrency: 2
        })
        assert.deepStrictEqual(versions, [2, 3])
        assert.deepStrictEqual(yield* keys.latestVersion("key_race"), Option.some(3))
      })
    )
  })
}
