import { assert, layer } from "@effect/vitest"
import type { ConnectionId, ConnectorId } from "@svc/domain/Ids"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectionRepo } from "./ConnectionRepo.ts"
import { ConnectorRepo } from "./ConnectorRepo.ts"
import * as Migrations from "./Migrations.ts"
import { ResourceRepo } from "./ResourceRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { fixtureId, at, envelope } from "./TestRows.ts"

const cxr = (tag: string) => fixtureId("cxr", tag)
const cxn = (tag: string) => fixtureId("cxn", tag)

for (const [backend, db] of TestDatabase.backends) {
  const Test = Layer.mergeAll(ResourceRepo.layer, ConnectorRepo.layer, ConnectionRepo.layer).pipe(
    Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db))
  )

  layer(Test, { timeout: "60 seconds" })(`ConnectionRepo (${backend})`, (it) => {
    const connector = (id: ConnectorId) =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const connectors = yield* ConnectorRepo
        yield* repo.insert("connectors", { id, ...envelope("root.cr", id), state: "draft", version: 1, type: "http" })
        yield* connectors.insertVersion(id, { type: "http" }, at(0))
      })

    const connection = (id: ConnectionId, connectorId: ConnectorId, credentialsEnc: string | null) =>
      Effect.flatMap(ResourceRepo, (repo) =>
        repo.insert("connections", {
          id,
          ...envelope("root.cr", id),
          connectorId,
          connectorVersion: 1,
          state: "configured",
          healthState: "healthy",
          setupStepId: null,
          configurationEnc: `cfg-${id}`,
          credentialsEnc
        })
      )

    /** A connection's `credentials@updatedAtSeconds` (`null` for no credentials) and its configuration. */
    const stored = (id: ConnectionId) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ credentialsEnc: string | null; configurationEnc: string | null; updatedAt: Date }>`
          SELECT credentials_enc, configuration_enc, updated_at FROM connections WHERE id = ${id}`
        assert.isDefined(row)
        assert.strictEqual(row.configurationEnc, `cfg-${id}`)
        return `${row.credentialsEnc ?? "null"}@${(new Date(row.updatedAt).getTime() - at(0).getTime()) / 1000}`
      })

    it.effect("swapCredentials replaces the ciphertext only when it is still the expected one", () =>
      Effect.gen(function* () {
        const connections = yield* ConnectionRepo
        yield* connector(cxr("swap"))
        yield* connection(cxn("swap"), cxr("swap"), null)
        yield* connection(cxn("swap_other"), cxr("swap"), null)
        assert.isFalse(yield* connections.swapCredentials(cxn("swap"), "v1:a", "v1:b", at(1)))
        assert.strictEqual(yield* stored(cxn("swap")), "null@0")
        assert.isTrue(yield* connections.swapCredentials(cxn("swap"), null, "v1:a", at(2)))
        assert.strictEqual(yield* stored(cxn("swap")), "v1:a@2")
        assert.isFalse(yield* connections.swapCredentials(cxn("swap"), null, "v1:x", at(3)))
        assert.strictEqual(yield* stored(cxn("swap")), "v1:a@2")
        assert.isTrue(yield* connections.swapCredentials(cxn("swap"), "v1:a", "v1:b", at(4)))
        assert.strictEqual(yield* stored(cxn("swap")), "v1:b@4")
        // A refresh that read `v1:a` loses to the rotation that already wrote `v1:b`.
        assert.isFalse(yield* connections.swapCredentials(cxn("swap"), "v1:a", "v1:c", at(5)))
        assert.strictEqual(yield* stored(cxn("swap")), "v1:b@4")
        assert.strictEqual(yield* stored(cxn("swap_other")), "null@0")
        assert.isFalse(yield* connections.swapCredentials(cxn("nope"), null, "v1:a", at(6)))
      })
    )

    it.effect("swapCredentials refuses a soft-deleted connection", () =>
      Effect.gen(function* () {
        const connections = yield* ConnectionRepo
        const repo = yield* ResourceRepo
        yield* connector(cxr("del"))
        yield* connection(cxn("del"), cxr("del"), "v1:a")
        yield* connection(cxn("del_null"), cxr("del"), null)
        yield* repo.softDelete("connections", cxn("del"), at(1))
        yield* repo.softDelete("connections", cxn("del_null"), at(1))
        assert.isFalse(yield* connections.swapCredentials(cxn("del"), "v1:a", "v1:b", at(2)))
        assert.isFalse(yield* connections.swapCredentials(cxn("del_null"), null, "v1:b", at(2)))
        assert.strictEqual(yield* stored(cxn("del")), "v1:a@1")
        assert.strictEqual(yield* stored(cxn("del_null")), "null@1")
      })
    )

    it.effect(
      "swapConfiguration replaces a configured or disabled connection's configuration only when unchanged",
      () =>
        Effect.gen(function* () {
          const connections = yield* ConnectionRepo
          const repo = yield* ResourceRepo
          const sql = yield* SqlClient.SqlClient
          const configuration = (id: ConnectionId) =>
            Effect.map(
              sql<{ configurationEnc: string | null; setupReturnUrl: string | null }>`
              SELECT configuration_enc, setup_return_url FROM connections WHERE id = ${id}`,
              (rows) => rows[0]
            )
          yield* connector(cxr("cfg"))
          yield* connection(cxn("cfg"), cxr("cfg"), "v1:a")
          yield* connection(cxn("cfg_setup"), cxr("cfg"), null)
          yield* connection(cxn("cfg_del"), cxr("cfg"), null)
          yield* sql`UPDATE connections SET state = 'setup' WHERE id = ${cxn("cfg_setup")}`
          yield* repo.softDelete("connections", cxn("cfg_del"), at(1))
          // A stale expected ciphertext loses.
          assert.isFalse(yield* connections.swapConfiguration(cxn("cfg"), "cfg-other", "cfg-new", at(2)))
          assert.strictEqual((yield* configuration(cxn("cfg")))?.configurationEnc, `cfg-${cxn("cfg")}`)
          assert.isTrue(yield* connections.swapConfiguration(cxn("cfg"), `cfg-${cxn("cfg")}`, "cfg-new", at(3)))
          assert.strictEqual((yield* configuration(cxn("cfg")))?.configurationEnc, "cfg-new")
          assert.isTrue(yield* connections.setState(cxn("cfg"), "disabled", at(4)))
          assert.isTrue(yield* connections.swapConfiguration(cxn("cfg"), "cfg-new", "cfg-newer", at(5)))
          // A connection in setup or deleted is not re-authenticated this way.
          const inSetup = `cfg-${cxn("cfg_setup")}`
          assert.isFalse(yield* connections.swapConfiguration(cxn("cfg_setup"), inSetup, "cfg-new", at(6)))
          assert.isFalse(
            yield* connections.swapConfiguration(cxn("cfg_del"), `cfg-${cxn("cfg_del")}`, "cfg-new", at(6))
          )
          assert.strictEqual((yield* configuration(cxn("cfg_setup")))?.configurationEnc, inSetup)
          yield* connections.setReturnUrl(cxn("cfg"), "https://app.example.test/re", at(7))
          assert.strictEqual((yield* configuration(cxn("cfg")))?.setupReturnUrl, "https://app.example.test/re")
          assert.strictEqual((yield* configuration(cxn("cfg_setup")))?.setupReturnUrl, null)
        })
    )
  })
}
