import { assert, layer } from "@effect/vitest"
import type { Permission } from "@svc/domain/Auth"
import type { AuthenticatedActor } from "@svc/domain/http/Security"
import { Definition } from "@svc/domain/RateLimit"
import type { RateLimitDefinitionInput } from "@svc/domain/RateLimitDefinition"
import type { RateLimitRequest } from "@svc/domain/RateLimitMatch"
import * as Migrations from "@svc/sql/Migrations"
import { jsonb, ResourceRepo } from "@svc/sql/ResourceRepo"
import * as TestDatabase from "@svc/sql/TestDatabase"
import { envelope } from "@svc/sql/TestRows"
import { Context, type Duration, Effect, Layer, Logger, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { Listing } from "../resources/Listing.ts"
import { RateLimits } from "../resources/RateLimits.ts"
import { ResourceOps } from "../resources/ResourceOps.ts"
import { RuleCache } from "./RuleCache.ts"

/** The cache of the writing process: RateLimits reloads it on every write. */
const Test = RateLimits.layerNoDeps.pipe(
  Layer.provideMerge(RuleCache.layerWith({ refreshInterval: "1 hour" })),
  Layer.provideMerge(Layer.mergeAll(ResourceOps.layerNoDeps, Listing.layerNoDeps)),
  Layer.provideMerge(ResourceRepo.layer),
  Layer.provideMerge(Layer.provideMerge(Migrations.layerMain, TestDatabase.pglite))
)

const admin: AuthenticatedActor = {
  id: "act_admin",
  externalId: "act_admin",
  namespace: "root",
  name: "act_admin",
  labels: {},
  annotations: {},
  permissions: [{ namespace: "**", resources: ["*"], verbs: ["*"] } satisfies Permission],
  restrictions: undefined,
  service: "api",
  expiresAt: undefined
}

const decode = Schema.decodeUnknownSync(Definition)

const definition = (fields: Omit<RateLimitDefinitionInput, "algorithm"> = {}) =>
  decode({ ...fields, algorithm: { fixed_window: { window: "1m", limit: 10 } } })

const request = (namespace: string, fields: Partial<RateLimitRequest> = {}): RateLimitRequest => ({
  namespace,
  labels: {},
  method: "GET",
  path: "/v1/users",
  requestType: "proxy",
  connectionId: "cxn_1",
  connectorId: "cxr_1",
  connectorVersion: 1,
  ...fields
})

/** A live namespace under root for one test (rules need their namespace to exist). */
const namespace = (path: string) =>
  Effect.flatMap(ResourceRepo, (repo) =>
    repo.insert("namespaces", { path, ...envelope("root", path.slice(path.lastIndexOf(".") + 1)) })
  )

const create = (namespacePath: string, fields: Omit<RateLimitDefinitionInput, "algorithm"> = {}) =>
  Effect.flatMap(RateLimits, (svc) => svc.create(admin, { namespace: namespacePath, definition: definition(fields) }))

const matchedIds = (cache: RuleCache["Service"], req: RateLimitRequest) =>
  cache.matching(req).map((matched) => matched.rule.id)

/** A second process's cache over the same database, on the test's clock; writes do not reach it. */
const otherProcess = (refreshInterval: Duration.Input) =>
  Effect.map(Layer.build(RuleCache.layerWith({ refreshInterval })), (context) => Context.get(context, RuleCache))

/** Waits (in real time, bounded) until the cache has made `generation` good loads. */
const loaded = (cache: RuleCache["Service"], generation: number) =>
  Effect.gen(function* () {
    for (let attempt = 0; attempt < 1_000; attempt++) {
      if (cache.snapshot().generation >= generation) return
      yield* TestClock.withLive(Effect.sleep("10 millis"))
    }
    assert.fail(`the cache did not reach generation ${generation}; it is at ${cache.snapshot().generation}`)
  })

const renameTable = (from: string, to: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`ALTER TABLE ${sql(from)} RENAME TO ${sql(to)}`)

const captured: Array<string> = []
const captureLogs = Logger.layer([Logger.make((options) => captured.push(Logger.formatJson.log(options)))])

layer(Test, { timeout: "60 seconds" })("RuleCache (PGlite)", (it) => {
  it.effect("a create, update and delete through this process apply to its cache at once", () =>
    Effect.gen(function* () {
      const cache = yield* RuleCache
      const svc = yield* RateLimits
      yield* namespace("root.writes")
      const before = cache.snapshot().generation
      const created = yield* create("root.writes", {
        selector: { methods: ["GET"] },
        bucket: { dimensions: ["connection"] }
      })
      assert.deepStrictEqual(matchedIds(cache, request("root.writes")), [created.id])
      assert.deepStrictEqual(cache.matching(request("root.writes"))[0]?.bucket, {
        key: '[["connection","cxn_1"]]',
        values: { connection: "cxn_1" }
      })
      assert.deepStrictEqual(matchedIds(cache, request("root.writes.child")), [created.id])
      assert.deepStrictEqual(matchedIds(cache, request("root.other")), [])

      yield* svc.update(admin, created.id, { definition: definition({ selector: { methods: ["POST"] } }) })
      assert.deepStrictEqual(matchedIds(cache, request("root.writes")), [])
      assert.deepStrictEqual(matchedIds(cache, request("root.writes", { method: "POST" })), [created.id])

      yield* svc.remove(admin, created.id)
      assert.deepStrictEqual(matchedIds(cache, request("root.writes", { method: "POST" })), [])
      assert.strictEqual(cache.snapshot().generation, before + 3)
    })
  )

  it.effect("another process picks up a new rule at its next reload, not before", () =>
    Effect.gen(function* () {
      yield* namespace("root.periodic")
      const other = yield* otherProcess("30 seconds")
      assert.strictEqual(other.snapshot().generation, 1)
      const created = yield* create("root.periodic")
      assert.deepStrictEqual(matchedIds(other, request("root.periodic")), [])
      yield* TestClock.adjust("30 seconds")
      yield* loaded(other, 2)
      assert.deepStrictEqual(matchedIds(other, request("root.periodic")), [created.id])
      yield* Effect.flatMap(RateLimits, (svc) => svc.remove(admin, created.id))
      yield* TestClock.adjust("30 seconds")
      yield* loaded(other, 3)
      assert.deepStrictEqual(matchedIds(other, request("root.periodic")), [])
    })
  )

  it.effect("a failed reload keeps the last good snapshot and logs a warning", () =>
    Effect.gen(function* () {
      const cache = yield* RuleCache
      yield* namespace("root.failing")
      const created = yield* create("root.failing")
      const good = cache.snapshot()
      captured.length = 0
      yield* renameTable("rate_limits", "rate_limits_away")
      const reloaded = yield* cache.reload.pipe(
        Effect.ensuring(Effect.orDie(renameTable("rate_limits_away", "rate_limits")))
      )
      assert.isFalse(reloaded)
      assert.strictEqual(cache.snapshot(), good)
      assert.deepStrictEqual(matchedIds(cache, request("root.failing")), [created.id])
      assert.isTrue(captured.some((line) => line.includes("keeping the last good snapshot")))
      assert.isTrue(yield* cache.reload)
      assert.strictEqual(cache.snapshot().generation, good.generation + 1)
    }).pipe(Effect.provide(captureLogs))
  )

  it.effect("a process whose first load fails starts empty and retries within 5 seconds", () =>
    Effect.gen(function* () {
      yield* namespace("root.first")
      const created = yield* create("root.first")
      yield* renameTable("rate_limits", "rate_limits_away")
      const other = yield* otherProcess("1 minute").pipe(
        Effect.ensuring(Effect.orDie(renameTable("rate_limits_away", "rate_limits")))
      )
      assert.strictEqual(other.snapshot().generation, 0)
      assert.deepStrictEqual(matchedIds(other, request("root.first")), [])
      yield* TestClock.adjust("5 seconds")
      yield* loaded(other, 1)
      assert.deepStrictEqual(matchedIds(other, request("root.first")), [created.id])
    })
  )

  it.effect("a rule that cannot run is skipped and logged once; the others still match", () =>
    Effect.gen(function* () {
      const cache = yield* RuleCache
      const repo = yield* ResourceRepo
      yield* namespace("root.invalid")
      captured.length = 0
      const good = yield* create("root.invalid")
      // A lookahead RE2 cannot run, stored before validation compiled regexes with RE2 (spec 4.6 rule 8).
      const lookahead = { id: "rl_lookahead" }
      yield* repo.insert("rate_limits", {
        id: lookahead.id,
        ...envelope("root.invalid", "lookahead"),
        definition: jsonb({
          selector: { path_match: { kind: "regex", value: "^/v1/(?=users)" } },
          algorithm: { fixed_window: { window: "1m", limit: 10 } }
        }),
        mode: "enforce"
      })
      yield* repo.insert("rate_limits", {
        id: "rl_undecodable",
        ...envelope("root.invalid", "undecodable"),
        definition: jsonb({ algorithm: {} }),
        mode: "enforce"
      })
      assert.isTrue(yield* cache.reload)
      assert.deepStrictEqual(matchedIds(cache, request("root.invalid")), [good.id])
      const skipped = cache
        .snapshot()
        .skipped.filter((rule) => rule.id === lookahead.id || rule.id === "rl_undecodable")
      assert.deepStrictEqual(skipped.map((rule) => rule.id).sort(), [lookahead.id, "rl_undecodable"].sort())
      assert.include(skipped.find((rule) => rule.id === lookahead.id)?.reason, "must be a valid regular expression")
      const warnings = () => captured.filter((line) => line.includes("is skipped"))
      assert.strictEqual(warnings().filter((line) => line.includes(lookahead.id)).length, 1)
      assert.strictEqual(warnings().filter((line) => line.includes("rl_undecodable")).length, 1)
      assert.isTrue(yield* cache.reload)
      assert.strictEqual(warnings().filter((line) => line.includes(lookahead.id)).length, 1)
      assert.strictEqual(warnings().filter((line) => line.includes("rl_undecodable")).length, 1)
    }).pipe(Effect.provide(captureLogs))
  )

  it.effect("every page of rules is loaded", () =>
    Effect.gen(function* () {
      const cache = yield* RuleCache
      const repo = yield* ResourceRepo
      const stored = jsonb(Schema.encodeSync(Definition)(definition()))
      for (let i = 0; i < 1_001; i++) {
        const id = `rl_bulk_${String(i).padStart(4, "0")}`
        yield* repo.insert("rate_limits", { id, ...envelope("root.bulk", id), definition: stored, mode: "enforce" })
      }
      assert.isTrue(yield* cache.reload)
      assert.strictEqual(cache.matching(request("root.bulk")).length, 1_001)
    })
  )
})
