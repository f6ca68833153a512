/**
 * The test kit's admin-api (`adminApi: true`): served over TLS with svc's development
 * certificate, reached by `SvcAdminClient` through `SvcTest.adminClient`; without the option
 * there is no admin-api and the admin client layer says why it cannot start.
 */
import { assert, describe, it } from "@effect/vitest"
import { SvcAdminClient } from "@svc/client/SvcAdminClient"
import { Cause, Effect, Exit, Layer } from "effect"
import { SvcTest } from "./SvcTest.ts"

const layer = SvcTest.layer({
  adminApi: true,
  fixture: {
    namespaces: [{ path: "root.ops" }],
    connectors: {
      ledger: { namespace: "root.ops", name: "ledger", definition: { type: "ledger", auth: { type: "none" } } }
    }
  }
})

describe("SvcTest with the admin-api", () => {
  it.layer(Layer.provideMerge(SvcTest.adminClient, layer), { timeout: 120_000 })((it) => {
    it.effect("answers an admin-only route (search) to SvcAdminClient over TLS", () =>
      Effect.gen(function* () {
        const svc = yield* SvcTest
        assert.match(svc.admin?.baseUrl ?? "", /^https:\/\/127\.0\.0\.1:\d+$/)
        assert.include(svc.admin?.certificate ?? "", "BEGIN CERTIFICATE")
        const admin = yield* SvcAdminClient
        const found = yield* admin.search.resources({ query: { q: "ledger", resourceType: "connectors" } })
        assert.deepStrictEqual(
          found.items.map((hit) => hit.id),
          [svc.seeded.connectors.ledger?.id]
        )
      })
    )
  })

  it.effect(
    "refuses to build the admin client for a kit started without adminApi",
    () =>
      Effect.gen(function* () {
        const exit = yield* Effect.exit(
          Effect.scoped(Layer.build(Layer.provide(SvcTest.adminClient, SvcTest.layer({}))))
        )
        assert.isTrue(Exit.isFailure(exit))
        if (Exit.isFailure(exit)) assert.include(Cause.pretty(exit.cause), "adminApi: true")
      }),
    120_000
  )
})
