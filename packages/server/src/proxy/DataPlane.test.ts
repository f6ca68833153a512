/**
 * Hot-path discipline of the proxy data plane (issue 6, ARCHITECTURE "request path"): the layers
 * are wired as `Serve.ts` wires them over in-memory PGlite, and every statement the main database
 * runs is counted. A cold request loads its target; warm `_proxy` and `_proxy_raw` requests run no
 * SQL at all, also with rate-limit rules matching them (enforce and observe, counted in memory); a connection write through `Connections.update` evicts the target at once (the next
 * request reloads and its event carries the new label), while a write the process did not make is
 * seen once `targetTtl` has passed. Request events go through the real buffer to a separate
 * app-metrics PGlite instance, so they are not main-database statements.
 */
import { TokenRefresher } from "../connections/TokenRefresher.ts"
import { Notifications } from "../resources/Notifications.ts"
import { CounterStore } from "../stores/CounterStore.ts"
import { NotificationRepo } from "@svc/sql/NotificationRepo"
import { assert, layer } from "@effect/vitest"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import type { ProxyRequest, ProxyResponse } from "@svc/domain/Proxy"
import type { RequestEvent } from "@svc/domain/RequestEvent"
import { CreateRateLimit } from "@svc/domain/RateLimit"
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import { ConnectorRepo } from "@svc/sql/ConnectorRepo"
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import * as Migrations from "@svc/sql/Migrations"
import * as PgliteClient from "@svc/sql/PgliteClient"
import { ResourceRepo } from "@svc/sql/ResourceRepo"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { loadConfig } from "../config/ConfigLoader.ts"
import { SvcConfig } from "../config/SvcConfig.ts"
import { ConnectionSecrets } from "../connections/ConnectionSecrets.ts"
import { Credentials } from "../connections/Credentials.ts"
import * as Envelope from "../crypto/Envelope.ts"
import { RequestEventSink } from "../events/RequestEventBuffer.ts"
import { ConnectionChanges } from "../resources/ConnectionChanges.ts"
import { Connections } from "../connections/Connections.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import { Connectors } from "../resources/Connectors.ts"
import { AppMetricsSql } from "../stores/Database.ts"
import { DefinitionValidator } from "../resources/DefinitionValidator.ts"
import { Encryption } from "../crypto/Encryption.ts"
import { Listing } from "../resources/Listing.ts"
import { Namespaces } from "../resources/Namespaces.ts"
import { RequestEvents, requestEventRepoLayer } from "../events/RequestEvents.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"
import { DataPlane } from "./DataPlane.ts"
import { CoolDownReports } from "../ratelimit/CoolDownReports.ts"
import { RequestLimiter } from "../ratelimit/RequestLimiter.ts"
import { RuleCache } from "../ratelimit/RuleCache.ts"
import { RateLimits } from "../resources/RateLimits.ts"
import { CoolDownStore } from "../stores/CoolDownStore.ts"
import { RateLimitStore } from "../stores/RateLimitStore.ts"
import { Outbound } from "../outbound/Outbound.ts"
import * as ProxyPlane from "./Proxy.ts"
import { ProxyCallers } from "./ProxyCallers.ts"
import { targetTtl } from "./ProxyTargets.ts"
import { warmServer } from "./testing/WarmServer.ts"
import { ActorDirectory } from "../resources/ActorDirectory.ts"
import { ActorRepo } from "@svc/sql/ActorRepo"
import { effectServer } from "../outbound/testing/EffectServer.ts"
import { type LocalServer, localServer } from "../outbound/testing/LocalServer.ts"
import { countStatements } from "./testing/QueryCounter.ts"

// The graph of Serve.ts: connection support, the data plane, the resource services over one
// ConnectionChanges (the writers' notices reach the data plane's cache).
const connectionSupport = Layer.mergeAll(ConnectionSecrets.layerNoDeps, Credentials.layerNoDeps).pipe(
  Layer.provideMerge(Layer.mergeAll(ConnectorDefinitions.layerNoDeps, Outbound.layer))
)
const dataPlane = ProxyPlane.layerNoDeps.pipe(Layer.provide(ActorDirectory.layerNoDeps))
/**
 * The limiter over the real rule cache and the in-memory stores; these tests see no upstream 429,
 * so telling the `Connection` entity anything is a failure of the test.
 */
const limiter = RequestLimiter.layerNoDeps.pipe(
  Layer.provideMerge(RuleCache.layerWith({ refreshInterval: "1 hour" })),
  Layer.provideMerge(RateLimitStore.layerMemory.pipe(Layer.provide(CoolDownStore.layerMemory))),
  Layer.provide(
    Layer.succeed(CoolDownReports)({
      upstream429: (id) => Effect.die(new Error(`unexpected 429 report for ${id}`)),
      success: (id) => Effect.die(new Error(`unexpected success report for ${id}`))
    })
  )
)
const services = Layer.mergeAll(
  Namespaces.layerNoDeps,
  Connectors.layerNoDeps,
  Connections.layerNoDeps,
  RateLimits.layerNoDeps,
  RequestEvents.layerNoDeps,
  dataPlane
).pipe(
  Layer.provideMerge(limiter),
  Layer.provideMerge(TokenRefresher.layer),
  Layer.provideMerge(Notifications.layerNoDeps),
  Layer.provideMerge(
    Layer.mergeAll(ResourceOps.layerNoDeps, Listing.layerNoDeps, connectionSupport, DefinitionValidator.layer)
  ),
  Layer.provideMerge(ConnectionChanges.layer)
)

/** The app-metrics database on a PGlite instance of its own, as `Database.layer` builds a separate one. */
const appMetricsDatabase = Layer.effect(
  AppMetricsSql,
  Effect.map(
    Layer.build(Layer.provideMerge(Migrations.layerAppMetrics, PgliteClient.layer({ dataDir: "memory://" }))),
    (context) => Context.get(context, SqlClient.SqlClient)
  )
)

/**
 * The embedded-default configuration and the real request-event buffer, both in a temp dir. The
 * buffer's background writer keeps the live clock (the tests move the test clock for the cache).
 */
const configAndSink = Layer.unwrap(
  Effect.gen(function* () {
    const dir = yield* Effect.acquireRelease(
      Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-dataplane-"))),
      (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
    )
    const config = yield* Effect.orDie(loadConfig({ cwd: dir, env: {} }))
    const sink = RequestEventSink.layerAt(path.join(dir, "spool")).pipe(
      Layer.provide(Layer.succeed(Clock.Clock, Clock.Clock.defaultValue()))
    )
    return Layer.merge(Layer.succeed(SvcConfig, config), sink)
  })
)

const Test = services.pipe(
  Layer.provideMerge(Encryption.layerKey(Envelope.generateKey())),
  Layer.provideMerge(configAndSink),
  Layer.provideMerge(
    Layer.mergeAll(
      ResourceRepo.layer,
      ActorRepo.layer,
      ConnectorRepo.layer,
      ConnectionRepo.layer,
      DataKeyRepo.layer,
      NotificationRepo.layer,
      CounterStore.layerMemory,
      requestEventRepoLayer
    )
  ),
  Layer.provideMerge(
    Layer.merge(Layer.provideMerge(Migrations.layerMain, TestDatabase.pgliteMemory), appMetricsDatabase)
  )
)

const admin: AuthenticatedActor = {
  id: "act_dataplane",
  externalId: "dataplane",
  namespace: "root",
  name: "dataplane",
  labels: {},
  annotations: {},
  permissions: [{ namespace: "**", resources: ["*"], verbs: ["*"] }],
  restrictions: undefined,
  service: "api",
  expiresAt: undefined
}

const apiKey = "dataplane-test-key-5f0c1e"

/** An upstream answering `{"ok":true}` to everything. */
const jsonUpstream = localServer((_request, response) => {
  response.writeHead(200, { "content-type": "application/json" })
  response.end('{"ok":true}')
})

/** A configured api_key (bearer) connection whose connector allows only `upstream`, labelled `tier=gold`. */
const connectionTo = (upstream: LocalServer, namespace: string) =>
  Effect.gen(function* () {
    yield* Effect.flatMap(Namespaces, (svc) => svc.create(admin, { path: namespace }))
    const connectors = yield* Connectors
    const connector = yield* connectors.create(admin, {
      namespace,
      definition: {
        type: "demo",
        auth: { type: "api_key", placement: "bearer" },
        proxy: { allowed_hosts: [`127.0.0.1:${upstream.port}`], allow_private_networks: true }
      }
    })
    yield* connectors.setVersionState(admin, connector.id, 1, "primary")
    const connection = yield* Effect.flatMap(Connections, (svc) =>
      svc.create(admin, { connectorId: connector.id, credentials: { api_key: apiKey }, labels: { tier: "gold" } })
    )
    return connection.id
  })

/** Counts the main database's statements (the PGlite behind `SqlClient`) until the test ends. */
const mainStatements = Effect.flatMap(PgliteClient.PgliteClient, (client) => countStatements(client.pglite))

/** `_proxy` of GET `<upstream>/json` with request label `phase`; asserts the envelope. */
const proxyJson = (id: string, upstream: LocalServer, phase: string) =>
  Effect.gen(function* () {
    const plane = yield* DataPlane
    const request: ProxyRequest = { url: `${upstream.origin}/json`, method: "GET", labels: { phase } }
    const answer = yield* plane.proxy(admin, id, request)
    assert.isFalse(HttpServerResponse.isHttpServerResponse(answer), "an envelope")
    const envelope = answer as ProxyResponse
    assert.deepStrictEqual([envelope.statusCode, envelope.bodyJson], [200, { ok: true }])
  })

/** The events of connection `id` whose request label `phase` is given, after a flush of the buffer. */
const eventsOf = (id: string, phase: string) =>
  Effect.gen(function* () {
    yield* Effect.flatMap(RequestEventSink, (sink) => sink.flush)
    const page = yield* Effect.flatMap(RequestEvents, (svc) =>
      svc.list(admin, { connectionId: id, labelSelector: `phase=${phase}`, limit: 1000 })
    )
    return page.items
  })

/** A rate-limit create body as the API decodes it. */
const ruleBody = Schema.decodeUnknownSync(CreateRateLimit)

const tiers = (events: ReadonlyArray<RequestEvent>) => events.map((event) => event.labels.tier)
const times = (n: number, tier: string) => Array.from({ length: n }, () => tier)

layer(Test, { timeout: "60 seconds" })("DataPlane hot path (PGlite)", (it) => {
  it.effect("warm _proxy requests run no SQL, rules matching; a connection update reloads the target once", () =>
    Effect.gen(function* () {
      const upstream = yield* jsonUpstream
      const id = yield* connectionTo(upstream, "root.hot")
      // Two rules at two levels match every request: neither rejects one of these 72 requests;
      // the observe bucket empties after its 5 tokens, so later events name it (a dry-run rejection).
      const rateLimits = yield* RateLimits
      const roomy = yield* rateLimits.create(
        admin,
        ruleBody({
          namespace: "root",
          labels: {},
          annotations: {},
          definition: {
            mode: "enforce",
            selector: { request_types: ["proxy"], methods: ["GET"] },
            bucket: { dimensions: ["connection"] },
            algorithm: { fixed_window: { window: "1h", limit: 1_000 } }
          }
        })
      )
      const watched = yield* rateLimits.create(
        admin,
        ruleBody({
          namespace: "root.hot",
          labels: {},
          annotations: {},
          definition: {
            mode: "observe",
            selector: { request_types: ["proxy"], label_selector: "tier" },
            bucket: { dimensions: [] },
            algorithm: { token_bucket: { capacity: 5, refill_rate: 0.001 } }
          }
        })
      )
      const counter = yield* mainStatements

      yield* proxyJson(id, upstream, "cold")
      const cold = counter.statements()
      assert.isTrue(
        cold.some((text) => /\bconnections\b/.test(text)),
        `the cold request reads its connection: ${JSON.stringify(cold)}`
      )

      counter.reset()
      for (let i = 0; i < 50; i++) yield* proxyJson(id, upstream, "warm")
      assert.deepStrictEqual(counter.statements(), [], "statements of 50 warm _proxy requests")
      assert.strictEqual(upstream.requests.length, 51)
      assert.isTrue(upstream.requests.every((request) => request.headers.authorization === `Bearer ${apiKey}`))

      yield* Effect.flatMap(Connections, (svc) => svc.update(admin, id, { labels: { tier: "platinum" } }))
      counter.reset()
      yield* proxyJson(id, upstream, "after")
      const reload = counter.statements()
      assert.isTrue(
        reload.some((text) => /\bconnections\b/.test(text)),
        `the request after the update reloads its connection: ${JSON.stringify(reload)}`
      )

      // A lower-case method is the same request to the rules (issue 32 item 4): `methods: [GET]` counts it.
      const plane = yield* DataPlane
      yield* plane.proxy(admin, id, { url: `${upstream.origin}/json`, method: "get", labels: { phase: "lower" } })
      const [lower] = yield* eventsOf(id, "lower")
      assert.strictEqual(lower?.method, "GET")
      assert.deepStrictEqual(
        lower?.rate_limit_matched?.map((match) => match.id),
        [roomy.id, watched.id]
      )
      assert.strictEqual(upstream.requests.at(-1)?.method, "GET")

      counter.reset()
      for (let i = 0; i < 20; i++) yield* proxyJson(id, upstream, "again")
      assert.deepStrictEqual(counter.statements(), [], "statements of 20 warm _proxy requests after the reload")

      // The events land in the app-metrics instance: reading them runs nothing on the main one.
      counter.reset()
      assert.deepStrictEqual(tiers(yield* eventsOf(id, "cold")), ["gold"])
      assert.deepStrictEqual(tiers(yield* eventsOf(id, "warm")), times(50, "gold"))
      assert.deepStrictEqual(tiers(yield* eventsOf(id, "after")), ["platinum"])
      assert.deepStrictEqual(tiers(yield* eventsOf(id, "again")), times(20, "platinum"))
      assert.deepStrictEqual(counter.statements(), [], "statements on the main database while reading events")

      // Every event lists both matches; from the sixth request on, the observe rule would have rejected.
      const events = [
        ...(yield* eventsOf(id, "cold")),
        ...(yield* eventsOf(id, "warm")),
        ...(yield* eventsOf(id, "after")),
        ...(yield* eventsOf(id, "again"))
      ]
      for (const event of events) {
        assert.strictEqual(event.response_source, "upstream")
        assert.deepStrictEqual(event.rate_limit_matched, [
          { id: roomy.id, mode: "enforce", bucket: { connection: id } },
          { id: watched.id, mode: "observe", bucket: {} }
        ])
      }
      const dryRuns = events.filter((event) => event.rate_limit_id === watched.id)
      assert.strictEqual(dryRuns.length, events.length - 5)
      assert.isTrue(dryRuns.every((event) => event.rate_limit_mode === "observe"))
    })
  )

  it.effect("warm _proxy_raw requests run no SQL", () =>
    Effect.gen(function* () {
      const upstream = yield* localServer((request, response) => {
        response.writeHead(200, { "content-type": "text/plain" })
        response.end(`raw ${request.method} ${request.url}`)
      })
      const id = yield* connectionTo(upstream, "root.raw")
      const plane = yield* DataPlane
      // The front server runs each request with the test's services (its clock decides cache expiry).
      const front = yield* effectServer((request, response) => plane.proxyRaw(admin, id, request, response))
      const raw = (n: number) =>
        Effect.promise(async () => {
          const response = await fetch(`${front.origin}/`, {
            headers: { "x-svc-upstream-url": `${upstream.origin}/stream?n=${n}`, "x-svc-label": "phase=raw" }
          })
          return [response.status, await response.text()] as const
        })
      const counter = yield* mainStatements

      assert.deepStrictEqual(yield* raw(0), [200, "raw GET /stream?n=0"])
      assert.isAbove(counter.statements().length, 0, "the cold request loads its target")

      counter.reset()
      for (let n = 1; n <= 30; n++) assert.deepStrictEqual(yield* raw(n), [200, `raw GET /stream?n=${n}`])
      assert.deepStrictEqual(counter.statements(), [], "statements of 30 warm _proxy_raw requests")
      assert.strictEqual(upstream.requests.length, 31)
      assert.isTrue(upstream.requests.every((request) => request.headers.authorization === `Bearer ${apiKey}`))
      assert.deepStrictEqual(tiers(yield* eventsOf(id, "raw")), times(31, "gold"))
    })
  )

  it.effect("warm door: a remembered caller's _proxy_raw and _proxy run no SQL and never reach the cold door", () =>
    Effect.gen(function* () {
      const upstream = yield* localServer((request, response) => {
        response.writeHead(200, { "content-type": "application/json" })
        response.end(JSON.stringify({ method: request.method, url: request.url }))
      })
      const id = yield* connectionTo(upstream, "root.warm")
      const plane = yield* DataPlane
      // The cold door loads the target and remembers the caller (as the HttpApi handler does).
      yield* plane.proxy(admin, id, { url: `${upstream.origin}/cold`, method: "GET" })
      // A token the callers remember: JWT-shaped, without a nonce (its signature is never read here).
      const authorization = `Bearer e30.${Buffer.from(JSON.stringify({ sub: "dataplane" })).toString("base64url")}.c2ln`
      ;(yield* ProxyCallers).remember("api", authorization, admin)
      const front = yield* warmServer(plane.warmDoor("api"))
      const counter = yield* mainStatements
      const before = plane.doors()
      for (let n = 0; n < 20; n++) {
        const [rawStatus, rawBody] = yield* Effect.promise(async () => {
          const response = await fetch(`${front.origin}/api/v1/connections/${id}/_proxy_raw`, {
            headers: {
              authorization,
              "x-svc-upstream-url": `${upstream.origin}/raw?n=${n}`,
              "x-svc-label": "phase=warm-door"
            }
          })
          return [response.status, (await response.json()) as unknown] as const
        })
        assert.deepStrictEqual([rawStatus, rawBody], [200, { method: "GET", url: `/raw?n=${n}` }])
        const [status, envelope] = yield* Effect.promise(async () => {
          const response = await fetch(`${front.origin}/api/v1/connections/${id}/_proxy`, {
            method: "POST",
            headers: { authorization, "content-type": "application/json" },
            body: JSON.stringify({
              url: `${upstream.origin}/env?n=${n}`,
              method: "PUT",
              labels: { phase: "warm-door" }
            })
          })
          return [response.status, (await response.json()) as unknown] as const
        })
        assert.strictEqual(status, 200)
        assert.deepStrictEqual((envelope as ProxyResponse).bodyJson, { method: "PUT", url: `/env?n=${n}` })
      }
      assert.deepStrictEqual(counter.statements(), [], "statements of 40 warm-door requests")
      const after = plane.doors()
      assert.deepStrictEqual({ warm: after.warm - before.warm, cold: after.cold - before.cold }, { warm: 40, cold: 0 })
      assert.deepStrictEqual(tiers(yield* eventsOf(id, "warm-door")), times(40, "gold"))
    })
  )

  it.effect("a write this process did not make is served from the cache until targetTtl has passed", () =>
    Effect.gen(function* () {
      const upstream = yield* jsonUpstream
      const id = yield* connectionTo(upstream, "root.ttl")
      const counter = yield* mainStatements
      yield* proxyJson(id, upstream, "first")
      // Another process's write: no ConnectionChanges notice reaches this process.
      const sql = yield* SqlClient.SqlClient
      yield* sql`UPDATE connections SET labels = jsonb_set(labels, '{tier}', '"silver"') WHERE id = ${id}`

      counter.reset()
      yield* proxyJson(id, upstream, "cached")
      assert.deepStrictEqual(counter.statements(), [], "a request within targetTtl")

      yield* TestClock.adjust(targetTtl)
      yield* proxyJson(id, upstream, "expired")
      assert.isAbove(counter.statements().length, 0, "the first request after targetTtl reloads")
      counter.reset()
      yield* proxyJson(id, upstream, "fresh")
      assert.deepStrictEqual(counter.statements(), [], "the request after the reload")

      assert.deepStrictEqual(tiers(yield* eventsOf(id, "cached")), ["gold"])
      assert.deepStrictEqual(tiers(yield* eventsOf(id, "expired")), ["silver"])
      assert.deepStrictEqual(tiers(yield* eventsOf(id, "fresh")), ["silver"])
    })
  )
})
