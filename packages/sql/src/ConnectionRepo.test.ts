import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { ConnectionRepo } from "./ConnectionRepo.ts"
import { ConnectorRepo } from "./ConnectorRepo.ts"
import * as Migrations from "./Migrations.ts"
import { ResourceRepo } from "./ResourceRepo.ts"
import * as TestDatabase from "./TestDatabase.ts"
import { at, envelope } from "./TestRows.ts"

for (const [backend, db] of TestDatabase.backends) {
  const Test = Layer.mergeAll(ResourceRepo.layer, ConnectorRepo.layer, ConnectionRepo.layer).pipe(
    Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, db))
  )

  layer(Test, { timeout: "60 seconds" })(`ConnectionRepo (${backend})`, (it) => {
    const connector = (id: string) =>
      Effect.gen(function* () {
        const repo = yield* ResourceRepo
        const connectors = yield* ConnectorRepo
        yield* repo.insert("connectors", { id, ...envelope("root.cr", id), state: "draft", version: 1, type: "http" })
        yield* connectors.insertVersion(id, { type: "http" }, at(0))
      })

    const connection = (id: string, connectorId: string, credentialsEnc: string | null) =>
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
    const stored = (id: string) =>
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
        yield* connector("cxr_swap")
        yield* connection("cxn_swap", "cxr_swap", null)
        yield* connection("cxn_swap_other", "cxr_swap", null)
        assert.isFalse(yield* connections.swapCredentials("cxn_swap", "v1:a", "v1:b", at(1)))
        assert.strictEqual(yield* stored("cxn_swap"), "null@0")
        assert.isTrue(yield* connections.swapCredentials("cxn_swap", null, "v1:a", at(2)))
        assert.strictEqual(yield* stored("cxn_swap"), "v1:a@2")
        assert.isFalse(yield* connections.swapCredentials("cxn_swap", null, "v1:x", at(3)))
        assert.strictEqual(yield* stored("cxn_swap"), "v1:a@2")
        assert.isTrue(yield* connections.swapCredentials("cxn_swap", "v1:a", "v1:b", at(4)))
        assert.strictEqual(yield* stored("cxn_swap"), "v1:b@4")
        // A refresh that read `v1:a` loses to the rotation that already wrote `v1:b`.
        assert.isFalse(yield* connections.swapCredentials("cxn_swap", "v1:a", "v1:c", at(5)))
        assert.strictEqual(yield* stored("cxn_swap"), "v1:b@4")
        assert.strictEqual(yield* stored("cxn_swap_other"), "null@0")
        assert.isFalse(yield* connections.swapCredentials("cxn_nope", null, "v1:a", at(6)))
      })
    )

    it.effect("swapCredentials refuses a soft-deleted connection", () =>
      Effect.gen(function* () {
        const connections = yield* ConnectionRepo
        const repo = yield* ResourceRepo
        yield* connector("cxr_del")
        yield* connection("cxn_del", "cxr_del", "v1:a")
        yield* connection("cxn_del_null", "cxr_del", null)
        yield* repo.softDelete("connections", "cxn_del", at(1))
        yield* repo.softDelete("connections", "cxn_del_null", at(1))
        assert.isFalse(yield* connections.swapCredentials("cxn_del", "v1:a", "v1:b", at(2)))
        assert.isFalse(yield* connections.swapCredentials("cxn_del_null", null, "v1:b", at(2)))
        assert.strictEqual(yield* stored("cxn_del"), "v1:a@1")
        assert.strictEqual(yield* stored("cxn_del_null"), "null@1")
      })
    )
  })
}
