import { createHash } from "node:crypto"
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { ServiceUnavailable } from "@svc/domain/Errors"
import { BrowserSessions, sessionKey, xsrfTokenMatches } from "./BrowserSessions.ts"
import { CounterStore, StoreUnavailable } from "../stores/CounterStore.ts"

const t0 = 1_750_000_000_000
const ttlMs = 60 * 60 * 1000
const memory = BrowserSessions.layerNoDeps.pipe(Layer.provideMerge(CounterStore.layerMemory))
const restrictions = [{ namespace: "root.acme.**", resources: ["connections"], verbs: ["get"] }]

const down = new StoreUnavailable({ operation: "test", cause: new Error("down") })
const brokenStore = Layer.succeed(CounterStore)({
  setIfAbsent: () => Effect.fail(down),
  get: () => Effect.fail(down),
  delete: () => Effect.fail(down),
  ping: () => Effect.fail(down)
})

describe("BrowserSessions", () => {
  it("keys a session by the SHA-256 of its id", () => {
    const id = "a".repeat(43)
    assert.strictEqual(sessionKey(id), `session:${createHash("sha256").update(id).digest("hex")}`)
  })

  it.effect("create → get returns the session; ids are 32 random bytes in base64url", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(t0)
      const sessions = yield* BrowserSessions
      const created = yield* sessions.create({ actorId: "act_1", externalId: "ext-1", restrictions, ttlMs })
      const other = yield* sessions.create({ actorId: "act_1", externalId: "ext-1", ttlMs })
      assert.match(created.sessionId, /^[A-Za-z0-9_-]{43}$/)
      assert.match(created.xsrfToken, /^[A-Za-z0-9_-]{43}$/)
      assert.notStrictEqual(created.sessionId, created.xsrfToken)
      assert.notStrictEqual(created.sessionId, other.sessionId)
      assert.strictEqual(created.expiresAt, t0 + ttlMs)

      const found = yield* sessions.get(created.sessionId)
      assert.isTrue(Option.isSome(found))
      if (Option.isSome(found)) {
        assert.deepStrictEqual(
          { ...found.value, xsrfHash: undefined },
          { actorId: "act_1", externalId: "ext-1", restrictions, xsrfHash: undefined, expiresAt: t0 + ttlMs }
        )
        assert.isTrue(xsrfTokenMatches(found.value, created.xsrfToken))
        assert.isFalse(xsrfTokenMatches(found.value, other.xsrfToken))
        assert.isFalse(xsrfTokenMatches(found.value, undefined))
        assert.isFalse(xsrfTokenMatches(found.value, ""))
      }
      const second = yield* sessions.get(other.sessionId)
      assert.strictEqual(Option.getOrUndefined(second)?.restrictions, undefined)
    }).pipe(Effect.provide(memory))
  )

  it.effect("the store holds neither the cookie value nor the XSRF token", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(t0)
      const sessions = yield* BrowserSessions
      const store = yield* CounterStore
      const created = yield* sessions.create({ actorId: "act_1", externalId: "ext-1", ttlMs })
      assert.deepStrictEqual(yield* store.get(created.sessionId), Option.none())
      assert.deepStrictEqual(yield* store.get(`session:${created.sessionId}`), Option.none())
      const raw = yield* store.get(sessionKey(created.sessionId))
      assert.isTrue(Option.isSome(raw))
      const text = Option.getOrElse(raw, () => "")
      assert.notInclude(text, created.sessionId)
      assert.notInclude(text, created.xsrfToken)
      assert.deepStrictEqual(Object.keys(JSON.parse(text)).sort(), ["actorId", "expiresAt", "externalId", "xsrfHash"])
    }).pipe(Effect.provide(memory))
  )

  it.effect("a session expires after its TTL (TestClock)", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(t0)
      const sessions = yield* BrowserSessions
      const created = yield* sessions.create({ actorId: "act_1", externalId: "ext-1", ttlMs })
      yield* TestClock.adjust(Duration.millis(ttlMs - 1))
      assert.isTrue(Option.isSome(yield* sessions.get(created.sessionId)))
      yield* TestClock.adjust(Duration.millis(1))
      assert.isTrue(Option.isNone(yield* sessions.get(created.sessionId)))
    }).pipe(Effect.provide(memory))
  )

  it.effect("revoke ends the session once", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(t0)
      const sessions = yield* BrowserSessions
      const created = yield* sessions.create({ actorId: "act_1", externalId: "ext-1", ttlMs })
      assert.isTrue(yield* sessions.revoke(created.sessionId))
      assert.isTrue(Option.isNone(yield* sessions.get(created.sessionId)))
      assert.isFalse(yield* sessions.revoke(created.sessionId))
    }).pipe(Effect.provide(memory))
  )

  it.effect("unknown, malformed ids and malformed stored values read as none", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(t0)
      const sessions = yield* BrowserSessions
      const store = yield* CounterStore
      assert.isTrue(Option.isNone(yield* sessions.get("b".repeat(43))))
      assert.isTrue(Option.isNone(yield* sessions.get("")))
      assert.isTrue(Option.isNone(yield* sessions.get("not a session id")))
      const garbage = "c".repeat(43)
      yield* store.setIfAbsent(sessionKey(garbage), "{not json", ttlMs)
      assert.isTrue(Option.isNone(yield* sessions.get(garbage)))
      const wrongShape = "d".repeat(43)
      yield* store.setIfAbsent(sessionKey(wrongShape), JSON.stringify({ actorId: 1, expiresAt: t0 + ttlMs }), ttlMs)
      assert.isTrue(Option.isNone(yield* sessions.get(wrongShape)))
      const pastExpiry = "e".repeat(43)
      const stale = { actorId: "a", externalId: "e", xsrfHash: "0".repeat(64), expiresAt: t0 }
      yield* store.setIfAbsent(sessionKey(pastExpiry), JSON.stringify(stale), ttlMs)
      assert.isTrue(Option.isNone(yield* sessions.get(pastExpiry)))
    }).pipe(Effect.provide(memory))
  )

  it.effect("a store outage is a 503 session_store_unavailable", () =>
    Effect.gen(function* () {
      const sessions = yield* BrowserSessions
      const exits: ReadonlyArray<Exit.Exit<unknown, ServiceUnavailable>> = [
        yield* Effect.exit(sessions.create({ actorId: "act_1", externalId: "ext-1", ttlMs })),
        yield* Effect.exit(sessions.get("f".repeat(43))),
        yield* Effect.exit(sessions.revoke("f".repeat(43)))
      ]
      assert.strictEqual(exits.length, 3)
      for (const exit of exits) {
        const error = Exit.findErrorOption(exit)
        assert.isTrue(Option.isSome(error))
        const value = Option.getOrUndefined(error)
        assert.instanceOf(value, ServiceUnavailable)
        assert.strictEqual(value?.code, "session_store_unavailable")
      }
    }).pipe(Effect.provide(BrowserSessions.layerNoDeps.pipe(Layer.provide(brokenStore))))
  )
})
