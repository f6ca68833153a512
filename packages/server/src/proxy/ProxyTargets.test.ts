/**
 * Stale-if-error of the proxy's connection targets (issue 16 item 4, docs/proxy.md "When the
 * database is unavailable"): the layers as `Serve.ts` wires them over in-memory PGlite, with the
 * resource repository behind a switch that fails its reads like an unreachable database. The
 * test clock drives the cache: a known connection is served from its last known state for
 * `staleIfError` and no longer; a never-seen one is 503 `store_unavailable`; a write in this
 * process drops the last known state; a stale entry asks the database again after `staleRetry`;
 * a database that does not answer counts as unavailable after `loadTimeout`, then after
 * `staleLoadTimeout` for a known connection.
 */
import { assert, layer } from "@effect/vitest"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { ConnectionRepo } from "@svc/sql/ConnectionRepo"
import { ConnectorRepo } from "@svc/sql/ConnectorRepo"
import { DataKeyRepo } from "@svc/sql/DataKeyRepo"
import * as Migrations from "@svc/sql/Migrations"
import { NotificationRepo } from "@svc/sql/NotificationRepo"
import { ResourceRepo } from "@svc/sql/ResourceRepo"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { Duration, Effect, Exit, Fiber, Layer, type Schema } from "effect"
import { ConnectionError, SqlError } from "effect/sql/SqlError"
import { TestClock } from "effect/testing"
import { loadConfig } from "../config/ConfigLoader.ts"
import { SvcConfig } from "../config/SvcConfig.ts"
import { ConnectionSecrets } from "../connections/ConnectionSecrets.ts"
import { Connections } from "../connections/Connections.ts"
import { Credentials } from "../connections/Credentials.ts"
import { TokenRefresher } from "../connections/TokenRefresher.ts"
import * as Envelope from "../crypto/Envelope.ts"
import { Encryption } from "../crypto/Encryption.ts"
import { Outbound } from "../outbound/Outbound.ts"
import { ConnectionChanges } from "../resources/ConnectionChanges.ts"
import { ConnectorDefinitions } from "../resources/ConnectorDefinitions.ts"
import { Connectors } from "../resources/Connectors.ts"
import { DefinitionValidator } from "../resources/DefinitionValidator.ts"
import { Listing } from "../resources/Listing.ts"
import { Namespaces } from "../resources/Namespaces.ts"
import { Notifications } from "../resources/Notifications.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"
import { CounterStore } from "../stores/CounterStore.ts"
import { loadTimeout, ProxyTargets, staleIfError, staleLoadTimeout, staleRetry, targetTtl } from "./ProxyTargets.ts"

/** The switch: while `down`, every read of a connection row fails like an unreachable database. */
const database = { down: false, hang: false, connectionReads: 0 }

const unreachable = new SqlError({
  reason: new ConnectionError({ cause: new Error("ECONNREFUSED"), message: "connect failed", operation: "connect" })
})

const switchableRepo = Layer.effect(
  ResourceRepo,
  Effect.map(ResourceRepo, (real) =>
    ResourceRepo.of({
      ...real,
      findLive: <S extends Schema.Top>(
        table: Parameters<typeof real.findLive>[0],
        id: string,
        schema: S,
        options?: { readonly forUpdate?: boolean }
      ) =>
        Effect.suspend(() => {
          if (table === "connections") database.connectionReads++
          if (table !== "connections") return real.findLive(table, id, schema, options)
          if (database.hang) return Effect.never
          return database.down ? Effect.fail(unreachable) : real.findLive(table, id, schema, options)
        })
    })
  )
).pipe(Layer.provide(ResourceRepo.layer))

const connectionSupport = Layer.mergeAll(ConnectionSecrets.layerNoDeps, Credentials.layerNoDeps).pipe(
  Layer.provideMerge(Layer.mergeAll(ConnectorDefinitions.layerNoDeps, Outbound.layer))
)

const config = Layer.effect(SvcConfig, Effect.orDie(loadConfig({ cwd: "/nonexistent-svc-test", env: {} })))

const Test = Layer.mergeAll(
  Namespaces.layerNoDeps,
  Connectors.layerNoDeps,
  Connections.layerNoDeps,
  ProxyTargets.layerNoDeps
).pipe(
  Layer.provideMerge(TokenRefresher.layer),
  Layer.provideMerge(Notifications.layerNoDeps),
  Layer.provideMerge(
    Layer.mergeAll(ResourceOps.layerNoDeps, Listing.layerNoDeps, connectionSupport, DefinitionValidator.layer)
  ),
  Layer.provideMerge(ConnectionChanges.layer),
  Layer.provideMerge(Encryption.layerKey(Envelope.generateKey())),
  Layer.provideMerge(config),
  Layer.provideMerge(
    Layer.mergeAll(
      switchableRepo,
      ConnectorRepo.layer,
      ConnectionRepo.layer,
      DataKeyRepo.layer,
      NotificationRepo.layer,
      CounterStore.layerMemory
    )
  ),
  Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, TestDatabase.pgliteMemory))
)

const admin: AuthenticatedActor = {
  id: "act_targets",
  externalId: "targets",
  namespace: "root",
  name: "targets",
  labels: {},
  annotations: {},
  permissions: [{ namespace: "**", resources: ["*"], verbs: ["*"] }],
  restrictions: undefined,
  service: "api",
  expiresAt: undefined
}

/** Two configured api_key connections in a fresh namespace. */
const twoConnections = (namespace: string) =>
  Effect.gen(function* () {
    yield* Effect.flatMap(Namespaces, (svc) => svc.create(admin, { path: namespace }))
    const connectors = yield* Connectors
    const connector = yield* connectors.create(admin, {
      namespace,
      definition: {
        type: "demo",
        auth: { type: "api_key", placement: "bearer" },
        proxy: { allowed_hosts: ["api.example.com"] }
      }
    })
    yield* connectors.setVersionState(admin, connector.id, 1, "primary")
    const connections = yield* Connections
    const a = yield* connections.create(admin, { connectorId: connector.id, credentials: { api_key: "key-a" } })
    const b = yield* connections.create(admin, { connectorId: connector.id, credentials: { api_key: "key-b" } })
    return [a.id, b.id] as const
  })

/** The 503 of an unavailable database, or a description of what came instead. */
const unavailableCode = <A, E>(exit: Exit.Exit<A, E>): string => {
  if (Exit.isSuccess(exit)) return "success"
  const error = exit.cause.reasons.find((reason) => reason._tag === "Fail")
  if (error === undefined || error._tag !== "Fail") return "defect"
  const failure = error.error
  return typeof failure === "object" && failure !== null && "code" in failure ? String(failure.code) : "failure"
}

const justOver = (duration: Duration.Duration) => Duration.sum(duration, Duration.millis(1))

layer(Test, { timeout: "60 seconds" })("ProxyTargets stale-if-error", (it) => {
  it.effect("serves a known connection from its last known state for staleIfError; a never-seen one is 503", () =>
    Effect.gen(function* () {
      const targets = yield* ProxyTargets
      const [known, neverSeen] = yield* twoConnections("root.stale")
      const fresh = yield* targets.get(admin, known)
      database.down = true
      try {
        yield* TestClock.adjust(justOver(targetTtl))
        const stale = yield* targets.get(admin, known)
        assert.deepStrictEqual(stale.row, fresh.row)
        assert.deepStrictEqual(stale.credentials, fresh.credentials)
        assert.strictEqual(unavailableCode(yield* Effect.exit(targets.get(admin, neverSeen))), "store_unavailable")

        // Still within the bound just before it passes; past it, 503 as well.
        yield* TestClock.adjust(Duration.subtract(staleIfError, Duration.seconds(10)))
        assert.strictEqual((yield* targets.get(admin, known)).row.id, known)
        yield* TestClock.adjust(Duration.seconds(11))
        assert.strictEqual(unavailableCode(yield* Effect.exit(targets.get(admin, known))), "store_unavailable")
      } finally {
        database.down = false
      }
      yield* TestClock.adjust(justOver(staleRetry))
      assert.strictEqual((yield* targets.get(admin, known)).row.id, known)
      assert.strictEqual((yield* targets.get(admin, neverSeen)).row.id, neverSeen)
    })
  )

  it.effect("a stale entry asks the database again only after staleRetry", () =>
    Effect.gen(function* () {
      const targets = yield* ProxyTargets
      const [known] = yield* twoConnections("root.retry")
      yield* targets.get(admin, known)
      database.down = true
      try {
        yield* TestClock.adjust(justOver(targetTtl))
        const before = database.connectionReads
        yield* targets.get(admin, known)
        yield* targets.get(admin, known)
        yield* targets.get(admin, known)
        assert.strictEqual(database.connectionReads - before, 1)
        yield* TestClock.adjust(justOver(staleRetry))
        yield* targets.get(admin, known)
        assert.strictEqual(database.connectionReads - before, 2)
      } finally {
        database.down = false
      }
    })
  )

  it.effect("a database that does not answer counts as unavailable after loadTimeout", () =>
    Effect.gen(function* () {
      const targets = yield* ProxyTargets
      const [known, neverSeen] = yield* twoConnections("root.hung")
      yield* targets.get(admin, known)
      database.hang = true
      try {
        yield* TestClock.adjust(justOver(targetTtl))
        const stale = yield* Effect.forkChild(targets.get(admin, known))
        const unseen = yield* Effect.forkChild(Effect.exit(targets.get(admin, neverSeen)))
        yield* Effect.yieldNow
        assert.isUndefined(stale.pollUnsafe())
        yield* TestClock.adjust(loadTimeout)
        assert.strictEqual((yield* Fiber.join(stale)).row.id, known)
        assert.strictEqual(unavailableCode(yield* Fiber.join(unseen)), "store_unavailable")
        // Loads are failing now: the next reload of the known connection waits only briefly.
        yield* TestClock.adjust(justOver(staleRetry))
        const again = yield* Effect.forkChild(targets.get(admin, known))
        yield* Effect.yieldNow
        assert.isUndefined(again.pollUnsafe())
        yield* TestClock.adjust(staleLoadTimeout)
        assert.strictEqual((yield* Fiber.join(again)).row.id, known)
      } finally {
        database.hang = false
      }
    })
  )

  it.effect("a write through this process drops the last known state: no stale answer after it", () =>
    Effect.gen(function* () {
      const targets = yield* ProxyTargets
      const [known] = yield* twoConnections("root.written")
      yield* targets.get(admin, known)
      yield* Effect.flatMap(Connections, (svc) => svc.update(admin, known, { labels: { tier: "silver" } }))
      database.down = true
      try {
        assert.strictEqual(unavailableCode(yield* Effect.exit(targets.get(admin, known))), "store_unavailable")
      } finally {
        database.down = false
      }
      assert.strictEqual((yield* targets.get(admin, known)).row.labels.tier, "silver")
    })
  )
})
