/**
 * OAuth2 token refresh (spec 8.3) against in-memory PGlite, the memory counter store and a token
 * endpoint on loopback: single flight within a process and across two refresher instances sharing
 * the database and the counter store (two processes), what is kept and when the next refresh is
 * due, failure classification with health and the re-authentication notice, the 401 path, the
 * client-credentials re-fetch and the sweep pass. Tests run on the live clock (the lease waiters poll).
 */
import { assert, layer } from "@effect/vitest"
import type { StoredCredentials } from "@svc/domain/ConnectorAuth"
import type { ConnectionId } from "@svc/domain/Ids"
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import { ConnectorRepo } from "@svc/sql/ConnectorRepo"
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import * as Migrations from "@svc/sql/Migrations"
import { NotificationRepo } from "@svc/sql/NotificationRepo"
import { ResourceRepo } from "@svc/sql/ResourceRepo"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { at, envelope, fixtureId } from "@svc/sql/TestRows"
import { Clock, Context, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import { loadConfig } from "../config/ConfigLoader.ts"
import { SvcConfig } from "../config/SvcConfig.ts"
import * as Envelope from "../crypto/Envelope.ts"
import { json } from "../oauth/testing/OAuthTestKit.ts"
import { Outbound } from "../outbound/Outbound.ts"
import { type LocalServer, localServer } from "../outbound/testing/LocalServer.ts"
import { ConnectionChanges } from "../resources/ConnectionChanges.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import { CounterStore } from "../stores/CounterStore.ts"
import { Encryption } from "../crypto/Encryption.ts"
import { Notifications } from "../resources/Notifications.ts"
import * as Kinds from "../resources/ResourceKinds.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"
import { ConnectionSecrets } from "./ConnectionSecrets.ts"
import { failureKey } from "./RefreshLease.ts"
import * as RefreshSweep from "./RefreshSweep.ts"
import { TokenRefresher } from "./TokenRefresher.ts"
import { resolveTelemetry } from "../config/TelemetryConfig.ts"
import { Meter } from "../telemetry/Metrics.ts"
import { makeTelemetry, Telemetry } from "../telemetry/Telemetry.ts"

/** Metrics on (the Prometheus store only), no exporter; `team` and `tier` labels projected. */
const meteredOnly = resolveTelemetry(
  { prometheus: { enabled: true }, proxy: { metricDimensionLabels: ["team", "tier"] } },
  {},
  []
)
import { dueAt } from "./UsableCredentials.ts"

const cxn = (tag: string) => fixtureId("cxn", tag)

const clientSecret = "refresher-client-s3cret"
const defaultLifetimeMs = 45 * 60_000

const config = Layer.unwrap(
  Effect.gen(function* () {
    const dir = yield* Effect.acquireRelease(
      Effect.promise(() => fs.mkdtemp(path.join(os.tmpdir(), "svc-refresher-"))),
      (dir) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
    )
    const loaded = yield* Effect.orDie(loadConfig({ cwd: dir, env: {} }))
    return Layer.succeed(SvcConfig, {
      ...loaded,
      oauth2: {
        ...loaded.oauth2,
        defaultTokenLifetimeMs: defaultLifetimeMs,
        clients: new Map([["app-1", { source: "value" as const, value: Redacted.make(clientSecret) }]])
      }
    })
  })
)

/** What every process shares: the database, the counter store, keys, and the stateless services. */
const shared = Layer.mergeAll(
  ConnectionSecrets.layerNoDeps,
  ConnectorDefinitions.layerNoDeps,
  Notifications.layerNoDeps,
  Outbound.layer,
  CounterStore.layerMemory
).pipe(
  Layer.provideMerge(ResourceOps.layerNoDeps),
  Layer.provideMerge(Encryption.layerKey(Envelope.generateKey())),
  Layer.provideMerge(config),
  Layer.provideMerge(
    Layer.mergeAll(
      ResourceRepo.layer,
      ConnectorRepo.layer,
      ConnectionRepo.layer,
      DataKeyRepo.layer,
      NotificationRepo.layer
    )
  ),
  Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, TestDatabase.pgliteMemory))
)

/** One svc process: its own refresher (in-process flights) and change notices. */
const processLayer = Layer.fresh(TokenRefresher.layer.pipe(Layer.provideMerge(ConnectionChanges.layer)))

const Test = processLayer.pipe(Layer.provideMerge(shared))

/** A token endpoint answering `answer()` after a short delay (so concurrent callers overlap). */
const tokenEndpoint = (answer: () => { readonly status: number; readonly body: unknown }) =>
  localServer((_request, response) => {
    const { status, body } = answer()
    setTimeout(() => json(response, status, body), 50)
  })

const tokenRequests = (server: LocalServer) => server.requests.filter((request) => request.url === "/token").length

const authCode = (server: LocalServer) => ({
  type: "oauth2",
  grant_type: "authorization_code",
  authorization_endpoint: `${server.origin}/authorize`,
  token_endpoint: `${server.origin}/token`,
  client_id: "app-1",
  client_auth: "client_secret_post"
})

const clientCredentials = (server: LocalServer) => ({
  type: "oauth2",
  grant_type: "client_credentials",
  token_endpoint: `${server.origin}/token`,
  client_auth: "client_secret_post"
})

/** A configured connection `id` of a fresh connector with `auth`, holding `credentials`. */
const connection = (
  id: ConnectionId,
  server: LocalServer,
  auth: unknown,
  credentials: StoredCredentials,
  labels: { readonly connector?: Record<string, string>; readonly connection?: Record<string, string> } = {}
) =>
  Effect.gen(function* () {
    const repo = yield* ResourceRepo
    // Each connection has its own connector, named after it.
    const connectorId = fixtureId("cxr", id)
    yield* repo.insert("connectors", {
      id: connectorId,
      ...envelope("root", connectorId, at(0), labels.connector),
      state: "draft",
      version: 1,
      type: "demo"
    })
    const definition = {
      type: "demo",
      auth,
      proxy: { allowed_hosts: [`127.0.0.1:${server.port}`], allow_private_networks: true }
    }
    yield* Effect.flatMap(ConnectorRepo, (connectors) => connectors.insertVersion(connectorId, definition, at(0)))
    const sealed = yield* Effect.flatMap(ConnectionSecrets, (secrets) =>
      secrets.sealCredentials({ id, namespace: "root" }, credentials)
    )
    yield* repo.insert("connections", {
      id,
      ...envelope("root", id, at(0), labels.connection),
      connectorId,
      connectorVersion: 1,
      state: "configured",
      healthState: "healthy",
      setupStepId: null,
      configurationEnc: null,
      credentialsEnc: sealed
    })
    return yield* loaded(id)
  })

/** The connection's row and definition as the proxy loads them. */
const loaded = (id: ConnectionId) =>
  Effect.gen(function* () {
    const row = Option.getOrThrow(yield* Effect.flatMap(ResourceOps, (ops) => ops.find(Kinds.connections, id)))
    const definition = yield* Effect.flatMap(ConnectorDefinitions, (d) => d.get(row.connectorId, row.connectorVersion))
    return { row, definition }
  })

const storedCredentials = (id: ConnectionId) =>
  Effect.gen(function* () {
    const { row } = yield* loaded(id)
    return yield* Effect.flatMap(ConnectionSecrets, (secrets) => secrets.credentials(row))
  })

/** Health, sweep time and active reauth notices of connection `id`. */
const stateOf = (id: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ healthState: string; tokenRefreshDueAt: Date | null }>`
      SELECT health_state, token_refresh_due_at FROM connections WHERE id = ${id}`
    const notices = yield* sql<{ metadata: { reason?: string } }>`
      SELECT metadata FROM notifications WHERE connection_id = ${id} AND key = 'svc.reauth' AND resolved_at IS NULL`
    return { health: row?.healthState, dueAt: row?.tokenRefreshDueAt ?? null, notices: notices.map((n) => n.metadata) }
  })

/** An authorization-code token set that expired a second ago. */
const expiredAuthCode = (suffix: string, refresh: boolean = true): StoredCredentials =>
  Effect.runSync(
    Effect.map(Clock.currentTimeMillis, (now) => ({
      kind: "oauth2_authorization_code" as const,
      token: {
        access_token: `at-old-${suffix}`,
        token_type: "bearer",
        expires_at: now - 1_000,
        ...(refresh ? { refresh_token: `rt-old-${suffix}` } : {}),
        scope: "read",
        obtained_at: now - 3_600_000
      }
    }))
  )

const granted =
  (access: string, extra: Record<string, unknown> = {}) =>
  () => ({
    status: 200,
    body: { access_token: access, token_type: "bearer", expires_in: 3600, ...extra }
  })

const concurrently = <A, E, R>(n: number, effect: Effect.Effect<A, E, R>) =>
  Effect.all(
    Array.from({ length: n }, () => effect),
    { concurrency: "unbounded" }
  )

layer(Test, { timeout: "60 seconds", excludeTestServices: true })(
  "TokenRefresher (PGlite, memory counter store)",
  (it) => {
    it.effect("20 concurrent requests on an expired token make one token request and share the new token", () =>
      Effect.gen(function* () {
        const server = yield* tokenEndpoint(granted("at-new-1", { refresh_token: "rt-new-1" }))
        const { row, definition } = yield* connection(cxn("flight"), server, authCode(server), expiredAuthCode("1"))
        const refresher = yield* TokenRefresher
        const results = yield* concurrently(20, refresher.usable(row, definition))
        assert.strictEqual(tokenRequests(server), 1)
        assert.deepStrictEqual(
          results.map((c) => (c?.kind === "oauth2_authorization_code" ? c.token.access_token : c?.kind)),
          Array.from({ length: 20 }, () => "at-new-1")
        )
        const stored = yield* storedCredentials(cxn("flight"))
        assert.strictEqual(stored?.kind === "oauth2_authorization_code" ? stored.token.refresh_token : "", "rt-new-1")
        const state = yield* stateOf(cxn("flight"))
        assert.strictEqual(state.dueAt?.getTime(), dueAt(definition, stored, defaultLifetimeMs)?.getTime())
        assert.isAbove(state.dueAt?.getTime() ?? 0, Date.now())
      })
    )

    it.effect("two processes with 10 concurrent requests each make one token request", () =>
      Effect.gen(function* () {
        const server = yield* tokenEndpoint(granted("at-new-2"))
        const { row, definition } = yield* connection(cxn("two"), server, authCode(server), expiredAuthCode("2"))
        const first = yield* TokenRefresher
        const second = Context.get(yield* Layer.build(processLayer), TokenRefresher)
        assert.notStrictEqual(first, second)
        const [a, b] = yield* Effect.all(
          [concurrently(10, first.usable(row, definition)), concurrently(10, second.usable(row, definition))],
          { concurrency: "unbounded" }
        )
        assert.strictEqual(tokenRequests(server), 1)
        for (const credentials of [...a, ...b]) {
          assert.strictEqual(
            credentials?.kind === "oauth2_authorization_code" && credentials.token.access_token,
            "at-new-2"
          )
        }
      })
    )

    it.effect(
      "a refresh without a new refresh token keeps the old one; without expires_in it is due after the default lifetime",
      () =>
        Effect.gen(function* () {
          const server = yield* tokenEndpoint(() => ({
            status: 200,
            body: { access_token: "at-new-3", token_type: "bearer" }
          }))
          const { row, definition } = yield* connection(cxn("keep"), server, authCode(server), expiredAuthCode("3"))
          yield* Effect.flatMap(TokenRefresher, (r) => r.usable(row, definition))
          const stored = yield* storedCredentials(cxn("keep"))
          assert.strictEqual(stored?.kind, "oauth2_authorization_code")
          if (stored?.kind !== "oauth2_authorization_code") return
          assert.strictEqual(stored.token.access_token, "at-new-3")
          assert.strictEqual(stored.token.refresh_token, "rt-old-3")
          assert.isUndefined(stored.token.expires_at)
          const obtained = stored.token.obtained_at ?? 0
          assert.isAbove(obtained, 0)
          assert.strictEqual((yield* stateOf(cxn("keep"))).dueAt?.getTime(), obtained + defaultLifetimeMs)
          // Not due again at once: the next use makes no token request.
          const again = yield* loaded(cxn("keep"))
          yield* Effect.flatMap(TokenRefresher, (r) => r.usable(again.row, again.definition))
          assert.strictEqual(tokenRequests(server), 1)
        })
    )

    it.effect("invalid_grant marks the connection unhealthy with one reauth notice; a later success clears both", () =>
      Effect.gen(function* () {
        let answer: () => { readonly status: number; readonly body: unknown } = () => ({
          status: 400,
          body: { error: "invalid_grant", error_description: "revoked" }
        })
        const server = yield* tokenEndpoint(() => answer())
        const { row, definition } = yield* connection(cxn("revoked"), server, authCode(server), expiredAuthCode("4"))
        const refresher = yield* TokenRefresher
        const counters = yield* CounterStore
        const used = yield* storedCredentials(cxn("revoked"))

        assert.isUndefined(yield* refresher.afterUnauthorized(row, definition, used))
        // The failure is remembered: a burst of 401s does not reach the provider again.
        assert.isUndefined(yield* refresher.afterUnauthorized(row, definition, used))
        assert.strictEqual(tokenRequests(server), 1)
        yield* counters.delete(failureKey(cxn("revoked")))
        assert.isUndefined(yield* refresher.afterUnauthorized(row, definition, used))
        assert.strictEqual(tokenRequests(server), 2)
        const failedState = yield* stateOf(cxn("revoked"))
        assert.deepStrictEqual([failedState.health, failedState.notices], ["unhealthy", [{ reason: "invalid_grant" }]])
        assert.isNull(failedState.dueAt)
        // A request still gets the old credentials (the upstream decides).
        const usable = yield* refresher.usable(row, definition)
        assert.strictEqual(usable?.kind === "oauth2_authorization_code" && usable.token.access_token, "at-old-4")

        answer = granted("at-new-4")
        yield* counters.delete(failureKey(cxn("revoked")))
        const renewed = yield* refresher.afterUnauthorized(row, definition, used)
        assert.strictEqual(renewed?.kind === "oauth2_authorization_code" && renewed.token.access_token, "at-new-4")
        const healed = yield* stateOf(cxn("revoked"))
        assert.deepStrictEqual([healed.health, healed.notices], ["healthy", []])
      })
    )

    it.effect(
      "a transient failure raises no notice, backs the sweep off, and marks unhealthy only an expired token",
      () =>
        Effect.gen(function* () {
          const server = yield* tokenEndpoint(() => ({ status: 503, body: { error: "temporarily_unavailable" } }))
          const now = yield* Clock.currentTimeMillis
          const soon: StoredCredentials = {
            kind: "oauth2_authorization_code",
            token: {
              access_token: "at-soon",
              token_type: "bearer",
              expires_at: now + 60_000,
              refresh_token: "rt-soon",
              obtained_at: now - 3_540_000
            }
          }
          const valid = yield* connection(cxn("flaky"), server, authCode(server), soon)
          const refresher = yield* TokenRefresher
          const kept = yield* refresher.usable(valid.row, valid.definition)
          assert.strictEqual(kept?.kind === "oauth2_authorization_code" && kept.token.access_token, "at-soon")
          const state = yield* stateOf(cxn("flaky"))
          assert.deepStrictEqual([state.health, state.notices], ["healthy", []])
          assert.isAtLeast(state.dueAt?.getTime() ?? 0, now + 30_000)

          const expired = yield* connection(cxn("flaky_expired"), server, authCode(server), expiredAuthCode("5"))
          yield* refresher.usable(expired.row, expired.definition)
          const expiredState = yield* stateOf(cxn("flaky_expired"))
          assert.deepStrictEqual([expiredState.health, expiredState.notices], ["unhealthy", []])
          assert.strictEqual(tokenRequests(server), 2)
        })
    )

    it.effect("after a 401: a token someone already refreshed is used without a token request", () =>
      Effect.gen(function* () {
        const server = yield* tokenEndpoint(granted("at-unused"))
        const { row, definition } = yield* connection(cxn("raced"), server, authCode(server), expiredAuthCode("6"))
        const used = yield* storedCredentials(cxn("raced"))
        const secrets = yield* ConnectionSecrets
        const newer: StoredCredentials = {
          kind: "oauth2_authorization_code",
          token: {
            access_token: "at-other-process",
            token_type: "bearer",
            refresh_token: "rt-x",
            obtained_at: Date.now()
          }
        }
        const sealed = yield* secrets.sealCredentials(row, newer)
        assert.isTrue(
          yield* Effect.flatMap(ConnectionRepo, (c) =>
            c.swapCredentials(row.id, row.credentialsEnc, sealed, new Date())
          )
        )
        const answer = yield* Effect.flatMap(TokenRefresher, (r) => r.afterUnauthorized(row, definition, used))
        assert.strictEqual(
          answer?.kind === "oauth2_authorization_code" && answer.token.access_token,
          "at-other-process"
        )
        assert.strictEqual(tokenRequests(server), 0)
      })
    )

    it.effect("after a 401 without a refresh token: no token request, reason no_refresh_token", () => {
      const store = new Meter()
      return Effect.gen(function* () {
        const server = yield* tokenEndpoint(granted("at-unused"))
        const { row, definition } = yield* connection(
          cxn("norefresh"),
          server,
          authCode(server),
          expiredAuthCode("7", false),
          { connector: { team: "connector-team", tier: "gold" }, connection: { team: "red", other: "x" } }
        )
        const refresher = yield* TokenRefresher
        // Nothing to refresh: a request uses the token as it is.
        const usable = yield* refresher.usable(row, definition)
        assert.strictEqual(usable?.kind === "oauth2_authorization_code" && usable.token.access_token, "at-old-7")
        assert.isUndefined(yield* refresher.afterUnauthorized(row, definition, usable))
        assert.strictEqual(tokenRequests(server), 0)
        const state = yield* stateOf(cxn("norefresh"))
        assert.deepStrictEqual([state.health, state.notices], ["unhealthy", [{ reason: "no_refresh_token" }]])
        // spec 8.3: counted as a failed refresh attempt with reason `no_refresh_token`, with the
        // connector's then the connection's labels projected.
        const series = (name: string) =>
          store.series(name).map((s): Record<string, unknown> => ({ ...s.attributes, value: s.value }))
        const labels = { "svc.label.team": "red", "svc.label.tier": "gold" }
        assert.deepStrictEqual(series("svc.oauth2.refresh.attempts.total"), [
          { result: "failure", ...labels, value: 1 }
        ])
        assert.deepStrictEqual(series("svc.oauth2.refresh.failures.total"), [
          { reason: "no_refresh_token", ...labels, value: 1 }
        ])
      }).pipe(
        Effect.provideService(
          Telemetry,
          makeTelemetry(meteredOnly, undefined, store, () => undefined)
        )
      )
    })

    it.effect("client credentials within 60 s of expiry are re-fetched once for 20 concurrent requests", () =>
      Effect.gen(function* () {
        const server = yield* tokenEndpoint(granted("cc-new"))
        const now = yield* Clock.currentTimeMillis
        const credentials: StoredCredentials = {
          kind: "oauth2_client_credentials",
          client_id: "svc-client",
          client_secret: "cc-s3cret",
          token: {
            access_token: "cc-old",
            token_type: "bearer",
            expires_at: now + 30_000,
            obtained_at: now - 3_570_000
          }
        }
        const { row, definition } = yield* connection(cxn("cc"), server, clientCredentials(server), credentials)
        const results = yield* concurrently(
          20,
          Effect.flatMap(TokenRefresher, (r) => r.usable(row, definition))
        )
        assert.strictEqual(tokenRequests(server), 1)
        assert.include(server.requests[0]?.body.toString() ?? "", "grant_type=client_credentials")
        assert.isTrue(
          results.every((c) => c?.kind === "oauth2_client_credentials" && c.token.access_token === "cc-new")
        )
        const stored = yield* storedCredentials(cxn("cc"))
        assert.deepStrictEqual(
          stored?.kind === "oauth2_client_credentials" ? [stored.client_id, stored.client_secret] : [],
          ["svc-client", "cc-s3cret"]
        )
      })
    )

    it.effect("a sweep pass refreshes the connections that are due and skips the others", () =>
      Effect.gen(function* () {
        const server = yield* tokenEndpoint(granted("at-swept"))
        const due = yield* connection(cxn("sweep_due"), server, authCode(server), expiredAuthCode("8"))
        const later = yield* connection(cxn("sweep_later"), server, authCode(server), expiredAuthCode("9"))
        const repo = yield* ConnectionRepo
        const now = yield* Clock.currentTimeMillis
        const dueTimes: ReadonlyArray<readonly [typeof due, Date]> = [
          [due, new Date(now - 1_000)],
          [later, new Date(now + 3_600_000)]
        ]
        for (const [{ row }, when] of dueTimes) {
          const sealed = row.credentialsEnc ?? ""
          yield* repo.swapCredentials(row.id, sealed, sealed, new Date(now), { tokenRefreshDueAt: when })
        }
        const counts = yield* RefreshSweep.pass
        assert.isAtLeast(counts.refreshed, 1)
        assert.strictEqual(tokenRequests(server), 1)
        const swept = yield* storedCredentials(cxn("sweep_due"))
        assert.strictEqual(swept?.kind === "oauth2_authorization_code" && swept.token.access_token, "at-swept")
        const untouched = yield* storedCredentials(cxn("sweep_later"))
        assert.strictEqual(untouched?.kind === "oauth2_authorization_code" && untouched.token.access_token, "at-old-9")
      })
    )
  }
)
