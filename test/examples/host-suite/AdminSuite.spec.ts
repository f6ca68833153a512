/**
 * The admin-api from a host application's tests: `adminApi: true` also serves svc's admin-api
 * (TLS, its development certificate) and `SvcTest.adminClient` provides `SvcAdminClient`.
 */
import { assert, describe, it } from "@effect/vitest"
import { SvcAdminClient } from "@svc/client/SvcAdminClient"
import { SvcTest } from "@svc/testing/SvcTest"
import { Effect, Layer } from "effect"

const svcLayer = SvcTest.layer({
  adminApi: true,
  fixture: {
    namespaces: [{ path: "root.ops" }],
    connectors: {
      ledger: { namespace: "root.ops", name: "ledger", definition: { type: "ledger", auth: { type: "none" } } }
    }
  }
})

describe("operations", () => {
  it.layer(Layer.provideMerge(SvcTest.adminClient, svcLayer), { timeout: 120_000 })((it) => {
    it.effect("finds the connector through the admin API's search", () =>
      Effect.gen(function* () {
        const { seeded } = yield* SvcTest
        const admin = yield* SvcAdminClient
        const found = yield* admin.search.resources({ query: { q: "ledger", resourceType: "connectors" } })
        assert.deepStrictEqual(
          found.items.map((hit) => hit.id),
          [seeded.connectors.ledger!.id]
        )
      })
    )
  })
})
