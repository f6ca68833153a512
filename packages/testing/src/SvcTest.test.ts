/**
 * The test kit inside the monorepo (the packed kit runs in test/e2e/TestKitPackages.test.ts): the
 * in-process svc seeds its fixture, proxies through a seeded connection to the fake upstream with
 * the connection's credentials, answers a rate-limited call with the typed 429, and signs tokens
 * svc accepts for a seeded actor.
 */
import { assert, describe, it } from "@effect/vitest"
import { SvcClient } from "@svc/client/SvcClient"
import { Effect } from "effect"
import { FakeUpstream } from "./FakeUpstream.ts"
import { SvcTest } from "./SvcTest.ts"

const layer = SvcTest.layer({
  fixture: ({ upstream }) => ({
    namespaces: [{ path: "root.acme" }],
    actors: { alice: { externalId: "alice", namespace: "root.acme" } },
    connectors: {
      crm: {
        namespace: "root.acme",
        name: "crm",
        definition: {
          type: "crm",
          auth: { type: "api_key", placement: "bearer" },
          proxy: { allowed_hosts: [upstream.host], allow_private_networks: true }
        }
      }
    },
    connections: { main: { connector: "crm", namespace: "root.acme", credentials: { api_key: "k-123" } } },
    rateLimits: {
      twoPerHour: {
        namespace: "root.acme",
        definition: {
          selector: { path_match: { kind: "prefix", value: "/limited" } },
          bucket: { dimensions: ["connection"] },
          algorithm: { sliding_window: { window: "1h", limit: 2, mode: "log" } }
        }
      }
    }
  })
})

describe("SvcTest", () => {
  it.layer(layer, { timeout: 120_000 })((it) => {
    it.effect("proxies through a seeded connection with its credentials", () =>
      Effect.gen(function* () {
        const svc = yield* SvcTest
        const upstream = yield* FakeUpstream
        upstream.route("/me", () => ({
          status: 200,
          headers: { "content-type": "application/json" },
          body: '{"me":1}'
        }))
        const client = yield* SvcClient
        const connection = svc.seeded.connections.main
        assert.isDefined(connection)
        const answer = yield* client.proxy.proxy({
          params: { id: connection.id },
          payload: { method: "GET", url: `${upstream.origin}/me?x=1` }
        })
        assert.strictEqual(answer.statusCode, 200)
        assert.deepStrictEqual(answer.bodyJson, { me: 1 })
        const seen = upstream.seen().filter((r) => r.path === "/me")
        assert.deepStrictEqual(
          seen.map((r) => [r.method, r.url, r.headers.authorization]),
          [["GET", "/me?x=1", "Bearer k-123"]]
        )
      })
    )

    it.effect("answers the third call of a two-per-hour rule with svc's own 429", () =>
      Effect.gen(function* () {
        const svc = yield* SvcTest
        const upstream = yield* FakeUpstream
        upstream.route("/limited", () => ({ status: 204 }))
        const client = yield* SvcClient
        const id = svc.seeded.connections.main?.id ?? ""
        const call = client.proxy.proxy({
          params: { id },
          payload: { method: "GET", url: `${upstream.origin}/limited` }
        })
        assert.strictEqual((yield* call).statusCode, 204)
        assert.strictEqual((yield* call).statusCode, 204)
        const rejected = yield* Effect.flip(call)
        assert.strictEqual(rejected._tag, "RateLimited")
        if (rejected._tag === "RateLimited") {
          assert.strictEqual(rejected.rate_limit_id, svc.seeded.rateLimits.twoPerHour?.id)
        }
        assert.strictEqual(upstream.seen().filter((r) => r.path === "/limited").length, 2)
      })
    )

    it.effect("signs tokens svc accepts for a seeded actor", () =>
      Effect.gen(function* () {
        const svc = yield* SvcTest
        const token = yield* Effect.promise(() => svc.token("alice"))
        const whoami = yield* Effect.flatMap(SvcClient, (client) => client.auth.whoami()).pipe(
          Effect.provide(SvcClient.layer({ baseUrl: svc.baseUrl, token }))
        )
        assert.strictEqual(whoami.actor.externalId, "alice")
        assert.strictEqual(whoami.actor.id, svc.seeded.actors.alice?.id)
      })
    )
  })
})
