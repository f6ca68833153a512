/**
 * A host application's tests with `@effect/vitest` (docs/testing.md): one in-process svc for the
 * suite, a connector and a rate-limit rule from the fixture, the connection created by the test.
 */
import { assert, describe, it } from "@effect/vitest"
import { SvcClient } from "@svc/client/SvcClient"
import { FakeUpstream } from "@svc/testing/FakeUpstream"
import { SvcTest } from "@svc/testing/SvcTest"
import { Effect } from "effect"

const svcLayer = SvcTest.layer({
  fixture: ({ upstream }) => ({
    namespaces: [{ path: "root.acme" }],
    connectors: {
      crm: {
        namespace: "root.acme",
        definition: {
          type: "crm",
          auth: { type: "api_key", placement: "bearer" },
          proxy: { allowed_hosts: [upstream.host], allow_private_networks: true }
        }
      }
    },
    rateLimits: {
      contacts: {
        namespace: "root.acme",
        definition: {
          selector: { path_match: { kind: "prefix", value: "/contacts" } },
          bucket: { dimensions: ["connection"] },
          algorithm: { sliding_window: { window: "1h", limit: 1, mode: "log" } }
        }
      }
    }
  })
})

describe("the CRM sync", () => {
  it.layer(svcLayer, { timeout: 120_000 })((it) => {
    it.effect("sends the customer's API key upstream through a new connection", () =>
      Effect.gen(function* () {
        const { seeded } = yield* SvcTest
        const upstream = yield* FakeUpstream
        upstream.route("/me", () => ({
          status: 200,
          headers: { "content-type": "application/json" },
          body: '{"id":7}'
        }))
        const svc = yield* SvcClient
        const connection = yield* svc.connections.create({
          payload: { connectorId: seeded.connectors.crm!.id, namespace: "root.acme", credentials: { api_key: "key-1" } }
        })
        const answer = yield* svc.proxy.proxy({
          params: { id: connection.id },
          payload: { method: "GET", url: `${upstream.origin}/me` }
        })
        assert.deepStrictEqual(answer.bodyJson, { id: 7 })
        const sent = upstream.seen().filter((request) => request.path === "/me")
        assert.deepStrictEqual(
          sent.map((request) => request.headers.authorization),
          ["Bearer key-1"]
        )
      })
    )

    it.effect("is answered 429 by svc once the rule's limit is used", () =>
      Effect.gen(function* () {
        const { seeded } = yield* SvcTest
        const upstream = yield* FakeUpstream
        upstream.route("/contacts", () => ({ status: 200, body: "[]" }))
        const svc = yield* SvcClient
        const connection = yield* svc.connections.create({
          payload: { connectorId: seeded.connectors.crm!.id, namespace: "root.acme", credentials: { api_key: "key-2" } }
        })
        const list = svc.proxy.proxy({
          params: { id: connection.id },
          payload: { method: "GET", url: `${upstream.origin}/contacts` }
        })
        assert.strictEqual((yield* list).statusCode, 200)
        const rejected = yield* Effect.flip(list)
        assert.strictEqual(rejected._tag, "RateLimited")
        assert.strictEqual(
          rejected._tag === "RateLimited" ? rejected.rate_limit_id : "",
          seeded.rateLimits.contacts!.id
        )
        assert.strictEqual(upstream.seen().filter((request) => request.path === "/contacts").length, 1)
      })
    )
  })
})
